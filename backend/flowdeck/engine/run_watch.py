"""Waiting for a run to end: answered from the run's last update when this process hears it, read otherwise.

A run's update is published only once the decision that made it is durable (engine/effects.py), and a
terminal one carries the run's output or error, so a waiter that hears it needs no read. A watch opened
before its run starts (a webhook's ``?wait``) cannot miss that update and skips the first read too;
updates can still be dropped (a full queue, a lost relay between processes), so a waiter that hears
nothing reads the run every ``POLL_SECONDS``.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from dataclasses import dataclass
from typing import Any, Final

from flowdeck.domain.statuses import TERMINAL_RUN_STATUSES, RunStatus
from flowdeck.engine.plans import RunNotFoundError
from flowdeck.engine.publisher import LocalPublisher, RunUpdate
from flowdeck.storage.records import InstanceRecord
from flowdeck.storage.state import StateManager

__all__ = ("POLL_SECONDS", "RunOutcome", "RunWatch")

POLL_SECONDS: Final = 0.25


@dataclass(frozen=True, slots=True)
class RunOutcome:
    """Where a run stands when the wait ends: terminal with its output or error, or still going."""

    status: RunStatus
    output: Any = None
    error: str | None = None

    @property
    def ended(self) -> bool:
        return self.status in TERMINAL_RUN_STATUSES


class RunWatch:
    """The run updates of one run, from the moment it is opened (a context manager)."""

    def __init__(self, publisher: LocalPublisher, state: StateManager, instance_id: str | None = None) -> None:
        self.instance_id = instance_id or str(uuid.uuid4())
        """The run's id: given, or a new one to start the run with (``start_workflow_run(instance_id=...)``)."""
        self._state = state
        self._updates = publisher.subscribe(self.instance_id, runs_only=True)

    def __enter__(self) -> RunWatch:
        return self

    def __exit__(self, *_: object) -> None:
        self._updates.close()

    async def outcome(self, timeout: float, *, opened_before_start: bool = False) -> RunOutcome:
        """Wait up to ``timeout`` seconds for the run to end. ``opened_before_start``: the watch was opened
        before the run was started, so every update it could miss is still queued: no first read."""
        deadline = time.monotonic() + timeout
        read = not opened_before_start
        while True:
            if read:
                current = await self._read()
                if current.ended or time.monotonic() >= deadline:
                    return current
            remaining = deadline - time.monotonic()
            heard = await self._heard_end(min(max(remaining, 0.0), POLL_SECONDS))
            if heard is not None:
                return heard
            read = True  # nothing heard for a while (or the time is up): the log is the truth

    async def _heard_end(self, seconds: float) -> RunOutcome | None:
        """The run's terminal update, if one arrives within ``seconds``."""
        deadline = time.monotonic() + seconds
        while (remaining := deadline - time.monotonic()) > 0:
            try:
                update = await asyncio.wait_for(self._updates.get(), timeout=remaining)
            except TimeoutError:
                return None
            if isinstance(update, RunUpdate) and update.status in TERMINAL_RUN_STATUSES:
                return RunOutcome(update.status, update.output, update.error)
        return None

    async def _read(self) -> RunOutcome:
        instance = await self.record()
        return RunOutcome(instance.status, instance.output, instance.error)

    async def record(self) -> InstanceRecord:
        instance = await self._state.get_instance(self.instance_id)
        if instance is None:
            raise RunNotFoundError(f"run {self.instance_id} does not exist")
        return instance
