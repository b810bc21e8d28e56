"""A delay as people read it: WAITING until it falls due, its successors PENDING meanwhile.

The engine completes a ``delay`` node at once and queues its successors with a due time (the ``dueAt`` of their
NODE_DISPATCHED rows, written in the same step right after the delay's NODE_COMPLETED row: no other decision's
row of the run comes between, but a worker's claim of another node, which takes no compare-and-swap, may put
its NODE_STARTED row there). The log stays as it is; this is how the per-node view (``fold_nodes``: the REST detail,
the live snapshot) shows it: the delay WAITING with ``nextAttemptAt`` = the due time until one of its successors
starts, then COMPLETED at that due time; the successors PENDING until they start. The timeline's bar of the delay
ends at the due time too (``delay_ends``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from flowdeck.domain.statuses import EventType, NodeStatus
from flowdeck.storage.records import LogRow

__all__ = ("DelayWait", "delay_waits", "waiting_status")

_MOVES = frozenset(
    {
        EventType.NODE_STARTED.value,
        EventType.NODE_COMPLETED.value,
        EventType.NODE_FAILED.value,
        EventType.NODE_SKIPPED.value,
        EventType.NODE_CANCELLED.value,
    }
)


@dataclass(slots=True)
class DelayWait:
    """One delay's wait: the node (in an iteration) that waits, until when, and the successors it holds."""

    node_id: str
    iteration: str
    due: float
    successors: list[str]
    ended_at: float | None = None
    """When the first successor moved (the wait is over); ``None`` while it lasts."""


def _due(row: LogRow) -> float | None:
    if row.event_type != EventType.NODE_DISPATCHED.value or row.node_id is None:
        return None
    due = (row.payload or {}).get("dueAt")
    return float(due) if isinstance(due, int | float) else None


def delay_waits(rows: Sequence[LogRow]) -> list[DelayWait]:
    """Every wait of a delay in the log, latest attempt's last."""
    waits: list[DelayWait] = []
    holding: dict[tuple[str, str], DelayWait] = {}
    current: DelayWait | None = None
    previous: LogRow | None = None
    for row in rows:
        due = _due(row)
        if due is not None and previous is not None and previous.node_id and previous.iteration == row.iteration:
            if current is None:
                current = DelayWait(previous.node_id, row.iteration, due, [])
                waits.append(current)
            current.successors.append(str(row.node_id))
            holding[(str(row.node_id), row.iteration)] = current
            continue  # the next delayed dispatch of the same step follows the same completion
        if row.event_type != EventType.NODE_STARTED.value:  # a claim's (another node's) may come between
            current = None
            previous = row if row.event_type == EventType.NODE_COMPLETED.value else None
        if row.node_id is not None and row.event_type in _MOVES:
            wait = holding.pop((row.node_id, row.iteration), None)
            if wait is not None and wait.ended_at is None:
                wait.ended_at = min(wait.due, row.created_at)
    return waits


def waiting_status(wait: DelayWait) -> NodeStatus:
    return NodeStatus.WAITING if wait.ended_at is None else NodeStatus.COMPLETED
