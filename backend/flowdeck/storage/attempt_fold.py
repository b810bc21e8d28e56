"""One node's attempts in one scope, folded from its own log rows: what the node details view shows per attempt.

The run view (``log_fold.fold_nodes``) keeps a node's latest attempt only; here every attempt keeps its
status, times, worker, error, output and logs, and the log id it started at, so the context it started
with can be folded from the rows logged before it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from flowdeck.domain.statuses import EventType, NodeStatus
from flowdeck.storage.log_fold import timeline_rows
from flowdeck.storage.records import InstanceRecord, LogRow

__all__ = ("AttemptView", "fold_attempts")

_RESULTS = (EventType.NODE_COMPLETED, EventType.NODE_SKIPPED)


@dataclass(slots=True)
class AttemptView:
    attempt: int
    status: NodeStatus
    started_at: float | None
    completed_at: float | None
    worker_id: str | None
    started_log_id: int
    """The row it started at (NODE_STARTED, else its first row): its context is what was logged before."""
    retry: int = 0
    """How many partial retries came before it (``TimelineRow.retry``)."""
    attempt_in_retry: int = 0
    error: str | None = None
    output: Any = None
    logs: str | None = None
    pinned: bool = False


def fold_attempts(rows: Sequence[LogRow], run: InstanceRecord) -> list[AttemptView]:
    """``rows``: one node's rows in one scope, in log order. Attempts in the order they began."""
    attempts = [
        AttemptView(
            bar.attempt,
            bar.status,
            bar.started_at,
            bar.completed_at,
            bar.worker_id,
            _started_at(rows, bar.attempt),
            retry=bar.retry,
            attempt_in_retry=bar.attempt_in_retry,
        )
        for bar in timeline_rows(rows, run)
    ]
    by_number = {each.attempt: each for each in attempts}
    for row in rows:
        each = by_number.get(row.node_attempt)
        if each is None:
            continue
        payload = row.payload if isinstance(row.payload, dict) else {}
        if row.event_type == EventType.NODE_FAILED:
            each.error = row.error_message
            each.logs = payload.get("logs") or each.logs
        elif (
            row.event_type in (EventType.NODE_COMPLETED, EventType.NODE_SKIPPED)
            and each.status is not NodeStatus.CANCELLED
        ):
            each.output = payload.get("output")
            each.logs = payload.get("logs") or each.logs
            each.pinned = bool(payload.get("pinned"))
            each.error = None
    return attempts


def _started_at(rows: Sequence[LogRow], attempt: int) -> int:
    own = [row for row in rows if row.node_attempt == attempt and row.event_type != EventType.SYSTEM_SET]
    started = [row.log_id for row in own if row.event_type == EventType.NODE_STARTED]
    return min(started or [row.log_id for row in own])
