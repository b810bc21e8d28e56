"""A production run's scheduled start (``availableAt``) and deadline (``deadlineAt``), epoch seconds.

A run with ``availableAt`` in the future is created PENDING with its start node's job due then (the
durable queue holds the wait, so a restart changes nothing); the start node's decision moves it to
RUNNING. ``deadlineAt`` caps the run's timeout: the run fails at the earlier of ``deadlineAt`` and
``options.timeoutSeconds`` after it began. Both are kept in the payload of the run's first
RUN_STATUS row, where the timeout sweep and a partial retry read them back.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Any

from flowdeck.storage.records import InstanceRecord

__all__ = ("RunTiming", "TimingError", "deadline_for", "timeout_reason")


class TimingError(ValueError):
    """A scheduled start or deadline that cannot be honoured; ``field`` names it (camelCase)."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field


@dataclass(frozen=True, slots=True)
class RunTiming:
    available_at: float | None = None
    deadline_at: float | None = None

    def check(self, now: float | None = None) -> RunTiming:
        """Refuse a deadline already past or before the scheduled start; returns itself."""
        now = time.time() if now is None else now
        for field, value in (("availableAt", self.available_at), ("deadlineAt", self.deadline_at)):
            if value is not None and (not math.isfinite(value) or value < 0):
                raise TimingError(field, f"{field} must be a time in epoch seconds, not {value!r}")
        if self.deadline_at is not None:
            if self.deadline_at <= now:
                raise TimingError("deadlineAt", f"deadlineAt ({self.deadline_at:g}) has already passed")
            if self.available_at is not None and self.deadline_at <= self.available_at:
                raise TimingError(
                    "deadlineAt", f"deadlineAt ({self.deadline_at:g}) is not after availableAt ({self.available_at:g})"
                )
        return self

    def payload(self) -> dict[str, float]:
        """What the run's first RUN_STATUS row records."""
        fields = {"availableAt": self.available_at, "deadlineAt": self.deadline_at}
        return {k: v for k, v in fields.items() if v is not None}

    @staticmethod
    def from_payload(payload: Any) -> RunTiming:
        payload = payload if isinstance(payload, dict) else {}
        return RunTiming(payload.get("availableAt"), payload.get("deadlineAt"))


def deadline_for(begin: float, timeout_seconds: float, deadline_at: float | None) -> float:
    """When a run that begins at ``begin`` fails: the earlier of its timeout and its deadline."""
    limit = begin + timeout_seconds
    return limit if deadline_at is None else min(limit, deadline_at)


def timeout_reason(instance: InstanceRecord | None, timing: RunTiming) -> str:
    """The error of a run the sweep fails: its deadline, or its timeout, whichever it passed."""
    if instance is not None and timing.deadline_at is not None and instance.deadline_at == timing.deadline_at:
        return f"run failed: it passed its deadline (deadlineAt {timing.deadline_at:g})"
    limit = (
        ""
        if instance is None or instance.started_at is None or instance.deadline_at is None
        else f" of {instance.deadline_at - instance.started_at:g} s"
    )
    return f"run timed out: it passed its timeout{limit} (options.timeoutSeconds)"
