"""What a node attempt came to, as the worker hands it to the orchestrator."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from flowdeck.handlers.base import ChildCall, Park

__all__ = ("Called", "Completed", "Failed", "NodeOutcome", "Parked", "RunStateError")


@dataclass(frozen=True, slots=True)
class Completed:
    output: Any
    handle: str | None
    queue_delay: float | None = None
    logs: str | None = None
    iterations: list[Any] | None = None
    labels: Mapping[str, str] | None = None
    """Run labels a ``python`` node set (``ctx.label``), written with its completion."""


@dataclass(frozen=True, slots=True)
class Failed:
    error_type: str
    message: str
    retryable: bool = True
    details: dict[str, Any] | None = None
    """More fields of the error output (a failed child run's ``instanceId``)."""


@dataclass(frozen=True, slots=True)
class Called:
    """A ``workflow`` node asked for a child run: the engine starts it and parks the node until it ends."""

    call: ChildCall


@dataclass(frozen=True, slots=True)
class Parked:
    """A ``wait`` node waits: the engine parks its job until it is resumed or its timeout passes."""

    park: Park


NodeOutcome = Completed | Failed | Called | Parked


class RunStateError(Exception):
    """The run is not in a state that allows this request (cancel a finished run, retry a running one)."""


def completed_payload(outcome: Completed, *, end: bool = False) -> dict[str, Any]:
    """The NODE_COMPLETED row's payload: the output, the handle taken, the end mark and the logs."""
    payload: dict[str, Any] = {"output": outcome.output, "handle": outcome.handle}
    if end:
        payload["end"] = True
    if outcome.logs:
        payload["logs"] = outcome.logs
    return payload
