"""State is a fold: the per-node view of a run, computed from its log rows (SPEC §5 ``nodes``)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from flowdeck.domain.statuses import EventType, NodeStatus, RunStatus
from flowdeck.storage.records import LogRow

__all__ = ("NodeView", "fold_nodes")

_TERMINAL = frozenset({NodeStatus.COMPLETED, NodeStatus.FAILED, NodeStatus.SKIPPED, NodeStatus.CANCELLED})

_STATUS_BY_EVENT = {
    EventType.NODE_DISPATCHED: NodeStatus.DISPATCHED,
    EventType.NODE_STARTED: NodeStatus.RUNNING,
    EventType.NODE_COMPLETED: NodeStatus.COMPLETED,
    EventType.NODE_SKIPPED: NodeStatus.SKIPPED,
}


@dataclass(slots=True)
class NodeView:
    status: NodeStatus = NodeStatus.PENDING
    attempt: int = 0
    started_at: float | None = None
    completed_at: float | None = None
    output: Any = None
    error: str | None = None
    pinned: bool = False
    logs: str | None = None
    next_attempt_at: float | None = None
    """RETRYING: when the next attempt starts; DISPATCHED behind a delay: when it falls due."""
    iterations: dict[str, NodeView] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "status": self.status.value,
            "attempt": self.attempt,
            "startedAt": self.started_at,
            "completedAt": self.completed_at,
            "output": self.output,
            "error": self.error,
        }
        if self.pinned:
            data["pinned"] = True
        if self.logs:
            data["logs"] = self.logs
        if self.next_attempt_at is not None:
            data["nextAttemptAt"] = self.next_attempt_at
        if self.iterations:
            data["iterations"] = {key: view.to_json() for key, view in self.iterations.items()}
        return data


def _apply(view: NodeView, row: LogRow) -> None:
    event = EventType(row.event_type)
    view.attempt = max(view.attempt, row.node_attempt)
    if event is EventType.NODE_FAILED:
        retrying = bool((row.payload or {}).get("retry"))
        view.status = NodeStatus.RETRYING if retrying else NodeStatus.FAILED
        view.next_attempt_at = (row.payload or {}).get("nextAttemptAt") if retrying else None
        view.error = row.error_message
        if view.status is NodeStatus.FAILED:
            view.completed_at = row.created_at
        return
    status = _STATUS_BY_EVENT.get(event)
    if status is None:
        return
    if view.status is NodeStatus.COMPLETED and status is not NodeStatus.COMPLETED:
        return  # nothing after a completion changes it (a late duplicate dispatch, say)
    view.status = status
    view.next_attempt_at = (row.payload or {}).get("dueAt") if status is NodeStatus.DISPATCHED else None
    if status is NodeStatus.RUNNING and view.started_at is None:
        view.started_at = row.created_at
    elif status in (NodeStatus.COMPLETED, NodeStatus.SKIPPED):
        payload = row.payload or {}
        view.completed_at = row.created_at
        view.output = payload.get("output")
        view.pinned = bool(payload.get("pinned"))
        view.logs = payload.get("logs")
        view.error = None
        if view.started_at is None:
            view.started_at = row.created_at


def fold_nodes(rows: Iterable[LogRow], run_status: RunStatus) -> dict[str, NodeView]:
    """Node id -> its view; body nodes of loops keep one view per iteration under ``iterations``."""
    nodes: dict[str, NodeView] = {}
    for row in rows:
        if row.node_id is None:
            continue
        view = nodes.setdefault(row.node_id, NodeView())
        if row.iteration:
            view = view.iterations.setdefault(row.iteration, NodeView())
        _apply(view, row)
    if run_status is RunStatus.CANCELLED:
        for view in nodes.values():
            if view.status not in _TERMINAL:
                view.status = NodeStatus.CANCELLED
    return nodes
