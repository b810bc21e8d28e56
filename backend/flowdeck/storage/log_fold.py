"""Folds of a run's log: the state of a run is computed from its append-only rows (SPEC §5).

Every fold of the log lives here, on the same event vocabulary: the context a node runs with
(``fold_context``), the per-node view the API and the live view show (``fold_nodes``), the timeline's
bars, one per attempt (``timeline_rows``), and the per-scope fold partial retry plans from
(``fold_scopes``); with the end-output merge rule (``merged_end_outputs``) and the terminal node
statuses they share.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from flowdeck.domain.statuses import TERMINAL_NODE_STATUSES, EventType, NodeStatus, RunStatus
from flowdeck.storage.records import InstanceRecord, LogRow

__all__ = (
    "NodeView",
    "ScopeFold",
    "TimelineRow",
    "fold_context",
    "fold_nodes",
    "fold_scopes",
    "merged_end_outputs",
    "timeline_rows",
)

_STATUS_BY_EVENT = {
    EventType.NODE_DISPATCHED: NodeStatus.DISPATCHED,
    EventType.NODE_STARTED: NodeStatus.RUNNING,
    EventType.NODE_COMPLETED: NodeStatus.COMPLETED,
    EventType.NODE_SKIPPED: NodeStatus.SKIPPED,
}


_RESULTS = frozenset({EventType.NODE_COMPLETED, EventType.NODE_FAILED})


# -- the context -----------------------------------------------------------------------------------
def fold_context(rows: Iterable[Any]) -> dict[str, Any]:
    """Fold log rows (event_type, node_id, output_variable, payload) in log order into a context."""
    context: dict[str, Any] = {}
    for event_type, node_id, output_variable, payload in rows:
        if event_type == EventType.NODE_COMPLETED:
            output = payload.get("output") if payload else None
            context[output_variable] = output
            context[f"__node_{node_id}"] = True
            if payload and payload.get("end"):
                context["output"] = _context_end_output(context.get("output"), output)
        elif event_type == EventType.INPUT_SET:
            context["input"] = payload.get("input") if payload else None
        elif payload:
            context.update(payload)
    return context


def _context_end_output(merged: Any, output: Any) -> Any:
    """``ctx.output`` after an end node: its object output merged over earlier ends' (later keys win)."""
    return {**merged, **output} if isinstance(merged, dict) and isinstance(output, dict) else output


def merged_end_outputs(payloads: Iterable[Any]) -> dict[str, Any]:
    """The outputs of the end nodes reached, merged in log order (later wins)."""
    merged: dict[str, Any] = {}
    for payload in payloads:
        if payload and payload.get("end") and isinstance(payload.get("output"), dict):
            merged.update(payload["output"])
    return merged


# -- the per-node view -----------------------------------------------------------------------------
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
    worker_id: str | None = None
    """The worker that started the latest attempt (a takeover names the new holder)."""
    iterations: dict[str, NodeView] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "status": self.status.value,
            "attempt": self.attempt,
            "startedAt": self.started_at,
            "completedAt": self.completed_at,
            "output": self.output,
            "error": self.error,
            "workerId": self.worker_id,
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


def _apply_to_node(view: NodeView, row: LogRow) -> None:
    event = EventType(row.event_type)
    if row.node_attempt and row.node_attempt < view.attempt and event in _RESULTS:
        return  # a late result of an attempt a newer one replaced (a stale lease holder's): recorded, not shown
    view.attempt = max(view.attempt, row.node_attempt)
    if event is EventType.NODE_STARTED:
        view.worker_id = (row.payload or {}).get("workerId")
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
        _apply_to_node(view, row)
    if run_status is RunStatus.CANCELLED:
        for view in nodes.values():
            if view.status not in TERMINAL_NODE_STATUSES:
                view.status = NodeStatus.CANCELLED
    return nodes


# -- the timeline ----------------------------------------------------------------------------------
@dataclass(slots=True)
class TimelineRow:
    """One attempt of one node (per loop iteration): a bar of the run's Gantt chart."""

    node_id: str
    iteration: str
    attempt: int
    status: NodeStatus
    started_at: float | None
    completed_at: float | None
    worker_id: str | None = None
    """The worker that ran this attempt."""
    taken_over: bool = False
    """The next attempt started while this one had no result: its worker stopped (died, froze past
    its lease, or handed it back) and another took the node over. The bar ends there, FAILED, unless
    that worker's late result arrives after all."""


def timeline_rows(rows: Iterable[LogRow], run: InstanceRecord) -> list[TimelineRow]:
    """Fold log rows into one row per (node, iteration, attempt), in the order the attempts began."""
    bars: dict[tuple[str, str, int], TimelineRow] = {}
    for row in rows:
        if row.node_id is None:
            continue
        key = (row.node_id, row.iteration, row.node_attempt)
        bar = bars.get(key)
        if bar is None:
            bar = bars[key] = TimelineRow(row.node_id, row.iteration, row.node_attempt, NodeStatus.PENDING, None, None)
        _apply_to_bar(bar, row)
        if row.event_type == EventType.NODE_STARTED:  # an attempt still running when the next one starts
            lost = bars.get((row.node_id, row.iteration, row.node_attempt - 1))
            if lost is not None and lost.status is NodeStatus.RUNNING:
                lost.status, lost.completed_at, lost.taken_over = NodeStatus.FAILED, row.created_at, True
    result = list(bars.values())
    if run.status is RunStatus.CANCELLED:
        for bar in result:
            if bar.status not in TERMINAL_NODE_STATUSES:
                bar.status = NodeStatus.CANCELLED
                bar.completed_at = run.completed_at
    return result


def _apply_to_bar(bar: TimelineRow, row: LogRow) -> None:
    event = row.event_type
    if event == EventType.NODE_DISPATCHED:
        if bar.status is NodeStatus.PENDING:
            bar.status = NodeStatus.DISPATCHED
    elif event == EventType.NODE_STARTED:
        if bar.status in (NodeStatus.PENDING, NodeStatus.DISPATCHED):
            bar.status = NodeStatus.RUNNING
        bar.started_at = bar.started_at or row.created_at
        bar.worker_id = (row.payload or {}).get("workerId")
    elif event in (EventType.NODE_COMPLETED, EventType.NODE_FAILED, EventType.NODE_SKIPPED):
        bar.status = _STATUS_BY_EVENT.get(EventType(event), NodeStatus.FAILED)  # an attempt that failed stays FAILED
        bar.completed_at = row.created_at
        bar.started_at = bar.started_at or row.created_at


# -- per scope (partial retry) ---------------------------------------------------------------------
@dataclass(slots=True)
class ScopeFold:
    handles: dict[str, str | None] = field(default_factory=dict)
    """Terminal nodes: the handle they completed on (``None`` when skipped)."""
    dispatched: set[str] = field(default_factory=set)
    last_attempt: dict[str, int] = field(default_factory=dict)


def fold_scopes(rows: Sequence[LogRow]) -> dict[str, ScopeFold]:
    folds: dict[str, ScopeFold] = {"": ScopeFold()}
    for row in rows:
        if row.node_id is None or row.event_type == EventType.SYSTEM_SET:
            continue  # a loop's per-iteration ctx.loop rows say nothing about whether the iteration ran
        fold = folds.setdefault(row.iteration, ScopeFold())
        node_id = row.node_id
        fold.last_attempt[node_id] = max(fold.last_attempt.get(node_id, 0), row.node_attempt)
        if row.event_type == EventType.NODE_COMPLETED:
            fold.handles[node_id] = (row.payload or {}).get("handle")
        elif row.event_type == EventType.NODE_SKIPPED:
            fold.handles[node_id] = None
        elif row.event_type == EventType.NODE_DISPATCHED:
            fold.dispatched.add(node_id)
    return folds
