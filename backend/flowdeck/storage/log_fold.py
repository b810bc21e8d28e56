"""Folds of a run's log: the state of a run is computed from its append-only rows (SPEC §5).

Every fold of the log lives here, on the same event vocabulary: the context a node runs with
(``fold_context``), the per-node view the API and the live view show (``fold_nodes``), the timeline's
bars, one per attempt (``timeline_rows``), and the per-scope fold partial retry plans from
(``fold_scopes``); with the end-output merge rule (``merged_end_outputs``) and the terminal node
statuses they share.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from flowdeck.domain.statuses import (
    TERMINAL_NODE_STATUSES,
    TERMINAL_RUN_STATUSES,
    EventType,
    NodeStatus,
    RunStatus,
)
from flowdeck.storage.children import CALL_KEY
from flowdeck.storage.delay_fold import delay_waits, waiting_status
from flowdeck.storage.records import InstanceRecord, LogRow
from flowdeck.storage.waits import WAIT_KEY

__all__ = (
    "GraphShape",
    "NodeView",
    "ScopeFold",
    "TimelineRow",
    "fold_context",
    "fold_nodes",
    "fold_scopes",
    "merge_end_output",
    "merged_end_outputs",
    "retry_count",
    "summarise",
    "superseded",
    "timeline_rows",
    "unfinished_nodes",
)

LOOP_KEY = "loop"
"""The output variable of a loop's per-iteration SYSTEM_SET row: the ``ctx.loop`` of that iteration."""

RETRY_REASON = "partial retry"
"""The reason of the RUN_STATUS row a partial retry writes."""

_STATUS_BY_EVENT = {
    EventType.NODE_DISPATCHED: NodeStatus.DISPATCHED,
    EventType.NODE_STARTED: NodeStatus.RUNNING,
    EventType.NODE_COMPLETED: NodeStatus.COMPLETED,
    EventType.NODE_SKIPPED: NodeStatus.SKIPPED,
    EventType.NODE_CANCELLED: NodeStatus.CANCELLED,
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
                context["output"] = merge_end_output(context.get("output") or {}, output)
        elif event_type == EventType.INPUT_SET:
            context["input"] = payload.get("input") if payload else None
        elif payload and output_variable not in (CALL_KEY, WAIT_KEY):  # bookkeeping, not data
            context.update(payload)
    return context


def superseded(completions: Iterable[tuple[str | None, str, int]]) -> set[tuple[str | None, str, int]]:
    """The (node, scope, attempt) completions a newer attempt's completion replaced.

    A worker frozen past its lease may report after the worker that took its node over did (docs/operations.md
    "Leases and takeovers"): its NODE_COMPLETED row is recorded, late, and starts nothing. Of a node's
    completions in one scope the newest attempt's is the one the run moved on with, wherever in the log the
    late one lands, so every reader of outputs (a later node's context, a loop's results) skips the others,
    as the run's view does (``_ignored``)."""
    newest: dict[tuple[str | None, str], int] = {}
    seen = list(completions)
    for node_id, scope, attempt in seen:
        newest[(node_id, scope)] = max(attempt, newest.get((node_id, scope), attempt))
    return {c for c in seen if c[2] < newest[(c[0], c[1])]}


def merge_end_output(merged: dict[str, Any], output: Any) -> dict[str, Any]:
    """The one end-output rule (SPEC §2): an end node's object output merged over the earlier ends' (later
    keys win); anything else adds nothing. Used for the run's output and ``ctx.output`` alike; the
    PostgreSQL end step does the same with JSONB ``||`` (held equal by test_one_statement_equivalence)."""
    return {**merged, **output} if isinstance(output, dict) else merged


def merged_end_outputs(payloads: Iterable[Any]) -> dict[str, Any]:
    """The outputs of the end nodes reached, merged in log order (later wins)."""
    merged: dict[str, Any] = {}
    for payload in payloads:
        if payload and payload.get("end"):
            merged = merge_end_output(merged, payload.get("output"))
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
    retry_base: int = 1
    """The attempt its latest dispatch started at (a partial retry dispatches at the next attempt)."""
    retry: int = 0
    """How many partial retries dispatched it again."""
    takeovers: int = 0
    """Attempts of the current dispatch taken from a worker that stopped (they spend no retry)."""
    child_instance_id: str | None = None
    """A ``workflow`` node: the run its latest call started."""
    waiting_for: dict[str, Any] | None = None
    """A ``wait`` node while WAITING: ``{resumeOn, url, until}``."""
    loop: dict[str, Any] | None = None
    """One iteration of a loop-body node: the ``ctx.loop`` (``{item, index, count}``) it ran with."""
    holds: list[str] | None = None
    """A delay while WAITING: the successors it holds, PENDING until it falls due (storage/delay_fold.py)."""
    before_cancel: NodeStatus | None = field(default=None, repr=False)
    """While CANCELLED by the run's end: the status it had (a partial retry resumes from there)."""
    late: LogRow | None = field(default=None, repr=False)
    """A result that arrived after the node was cancelled: recorded, shown once a retry uses it."""

    @property
    def attempt_in_retry(self) -> int:
        """ "attempt 1 of 3" within the current retry, never "4/3"."""
        return max(0, self.attempt - self.retry_base + 1 - self.takeovers) if self.attempt else 0

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "status": self.status.value,
            "attempt": self.attempt,
            "startedAt": self.started_at,
            "completedAt": self.completed_at,
            "output": self.output,
            "error": self.error,
            "workerId": self.worker_id,
            "attemptInRetry": self.attempt_in_retry,
            "retry": self.retry,
        }
        if self.pinned:
            data["pinned"] = True
        if self.logs:
            data["logs"] = self.logs
        if self.next_attempt_at is not None:
            data["nextAttemptAt"] = self.next_attempt_at
        if self.child_instance_id is not None:
            data["childInstanceId"] = self.child_instance_id
        if self.waiting_for is not None and self.status is NodeStatus.WAITING:
            data["waitingFor"] = self.waiting_for
        if self.loop is not None:
            data["loop"] = self.loop
        if self.holds and self.status is NodeStatus.WAITING:
            data["holds"] = self.holds
        if self.iterations:
            data["iterations"] = {key: view.to_json() for key, view in self.iterations.items()}
        return data


def _ignored(view: NodeView, row: LogRow, event: EventType) -> bool:
    """Rows recorded but not shown: anything of a cancelled node's attempt (a late result is kept aside
    until a retry uses it), and a late result of an attempt a newer one replaced (a stale lease holder's)."""
    if view.before_cancel is not None and row.node_attempt <= view.attempt:
        if event is EventType.NODE_COMPLETED:
            view.late = row  # terminal means terminal: a late result changes nothing until a retry uses it
        return True
    return bool(row.node_attempt) and row.node_attempt < view.attempt and event in _RESULTS


def _note_holder(view: NodeView, row: LogRow, event: EventType) -> None:
    """A NODE_STARTED row names the worker holding the attempt, and how often the job was taken over."""
    if event is EventType.NODE_STARTED:
        view.worker_id = (row.payload or {}).get("workerId")
        view.takeovers = int((row.payload or {}).get("takeovers") or 0)


def _apply_bookkeeping(view: NodeView, row: LogRow) -> None:
    """A node's SYSTEM_SET rows: a ``workflow`` node's call, a ``wait`` node parking (WAITING)."""
    payload = row.payload or {}
    if row.output_variable == CALL_KEY:
        view.child_instance_id = (payload.get(CALL_KEY) or {}).get("instanceId")
    elif row.output_variable == WAIT_KEY and view.status is NodeStatus.RUNNING:
        view.status, view.waiting_for = NodeStatus.WAITING, payload.get(WAIT_KEY)


def _apply_to_node(view: NodeView, row: LogRow) -> None:
    event = EventType(row.event_type)
    if _ignored(view, row, event):
        return
    view.attempt = max(view.attempt, row.node_attempt)
    if event is EventType.SYSTEM_SET:
        _apply_bookkeeping(view, row)
        return
    _note_holder(view, row, event)
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
    if status is NodeStatus.DISPATCHED and row.node_attempt > view.retry_base:
        view.retry_base, view.retry, view.takeovers = row.node_attempt, view.retry + 1, 0
    view.before_cancel, view.late = (view.status if status is NodeStatus.CANCELLED else None), None
    view.status = status
    if status is NodeStatus.CANCELLED:
        view.completed_at = row.created_at
        view.next_attempt_at = None
        return
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


@dataclass(frozen=True, slots=True)
class GraphShape:
    """What the fold needs of a run's graph to list the nodes that never got a row: every node id, with
    the innermost loop whose iterations run it (``None`` at top level)."""

    loop_of: Mapping[str, str | None]


def fold_nodes(rows: Iterable[LogRow], run_status: RunStatus, shape: GraphShape | None = None) -> dict[str, NodeView]:
    """Node id -> its view, as the API, the live snapshot and the editor show it.

    Body nodes of loops keep one view per iteration they ran in under ``iterations``, each with the
    ``ctx.loop`` it received; their own view sums the iterations up (``summarise``). Once the run has
    ended nothing is left PENDING, DISPATCHED, RUNNING or RETRYING: it is CANCELLED (SPEC §2). With the
    graph's ``shape``, a run that ended unfinished also lists what never started as CANCELLED: every node
    of the graph, and in each iteration that began, every node of that loop's body.
    """
    rows = list(rows)
    nodes, loops, loop_nodes = _fold_rows(rows)
    _show_delays(nodes, rows)
    ended = run_status in TERMINAL_RUN_STATUSES
    if shape is not None and ended and run_status is not RunStatus.COMPLETED:
        _add_never_started(nodes, loop_nodes, shape)
    for view in nodes.values():
        for iteration, each in view.iterations.items():
            each.loop = loops.get(iteration)
            if ended:
                _close(each)
        if view.iterations and view.attempt == 0:  # a loop-body node: every row of it is an iteration's
            summarise(view)
        if ended:
            _close(view)
    return nodes


def _view_of(nodes: dict[str, NodeView], node_id: str, iteration: str) -> NodeView | None:
    view = nodes.get(node_id)
    return view if view is None or not iteration else view.iterations.get(iteration)


def _show_delays(nodes: dict[str, NodeView], rows: Sequence[LogRow]) -> None:
    """A delay is WAITING until it falls due, its successors PENDING meanwhile (storage/delay_fold.py)."""
    for wait in delay_waits(rows):
        delay = _view_of(nodes, wait.node_id, wait.iteration)
        if delay is None or delay.status is not NodeStatus.COMPLETED:
            continue
        delay.status = waiting_status(wait)
        delay.completed_at, delay.next_attempt_at = wait.ended_at, None if wait.ended_at else wait.due
        delay.holds = None if wait.ended_at else list(wait.successors)
        for successor in wait.successors if wait.ended_at is None else ():
            view = _view_of(nodes, successor, wait.iteration)
            if view is not None and view.status is NodeStatus.DISPATCHED:
                view.status, view.next_attempt_at = NodeStatus.PENDING, None


def _fold_rows(
    rows: Iterable[LogRow],
) -> tuple[dict[str, NodeView], dict[str, dict[str, Any]], dict[str, str]]:
    """The views exactly as the rows leave them, each iteration's ``ctx.loop`` by iteration path, and the
    loop node that began each iteration."""
    nodes: dict[str, NodeView] = {}
    loops: dict[str, dict[str, Any]] = {}
    loop_nodes: dict[str, str] = {}
    for row in rows:
        if row.node_id is None:
            if row.event_type == EventType.RUN_STATUS and row.node_status == RunStatus.RUNNING.value:
                _use_late_results(nodes.values())  # a partial retry keeps what finished after the cancel
            continue
        if row.event_type == EventType.SYSTEM_SET and row.output_variable == LOOP_KEY:
            loops[row.iteration] = (row.payload or {}).get(LOOP_KEY) or {}  # the iteration's context, not a node
            loop_nodes[row.iteration] = row.node_id
            continue
        view = nodes.setdefault(row.node_id, NodeView())
        if row.iteration:
            view = view.iterations.setdefault(row.iteration, NodeView())
        _apply_to_node(view, row)
    return nodes, loops, loop_nodes


def _add_never_started(nodes: dict[str, NodeView], loop_nodes: Mapping[str, str], shape: GraphShape) -> None:
    """The nodes an unfinished run never started: CANCELLED where they would have run (SPEC §2)."""
    body_of: dict[str, list[str]] = {}
    for node_id, loop_id in shape.loop_of.items():
        if loop_id is not None:
            body_of.setdefault(loop_id, []).append(node_id)
    began = {iteration for view in nodes.values() for iteration in view.iterations}  # a loop logs every item's
    for iteration, loop_id in loop_nodes.items():  # ctx.loop as it starts: an iteration began once a node ran in it
        if iteration not in began:
            continue
        for node_id in body_of.get(loop_id, ()):
            view = nodes.setdefault(node_id, NodeView())
            view.iterations.setdefault(iteration, NodeView(status=NodeStatus.CANCELLED))
    for node_id in shape.loop_of:
        nodes.setdefault(node_id, NodeView(status=NodeStatus.CANCELLED))


def _close(view: NodeView) -> None:
    """The run has ended: a node not yet terminal is CANCELLED, whether or not a row says so."""
    if view.status not in TERMINAL_NODE_STATUSES:
        view.status = NodeStatus.CANCELLED
        view.next_attempt_at = None


def summarise(view: NodeView) -> None:
    """A loop-body node's own status, from its iterations (docs/api.md "Loop bodies"): FAILED if any
    iteration failed, else RUNNING if any is DISPATCHED, RUNNING or RETRYING, else WAITING if any is
    WAITING (a ``wait`` node parked in it), else CANCELLED if any was cancelled, else SKIPPED if every one
    was skipped, else COMPLETED. Its attempt, error and worker are
    those of the iteration that decided the status (the first failed one, say), its times span them all;
    outputs stay per iteration."""
    iterations = list(view.iterations.values())
    statuses = {each.status for each in iterations}
    if NodeStatus.FAILED in statuses:
        status = NodeStatus.FAILED
    elif statuses - TERMINAL_NODE_STATUSES - {NodeStatus.WAITING}:
        status = NodeStatus.RUNNING
    elif NodeStatus.WAITING in statuses:
        status = NodeStatus.WAITING
    elif NodeStatus.CANCELLED in statuses:
        status = NodeStatus.CANCELLED
    elif statuses == {NodeStatus.SKIPPED}:
        status = NodeStatus.SKIPPED
    else:
        status = NodeStatus.COMPLETED
    lead = next((each for each in iterations if _summed_as(each.status) is status), iterations[-1])
    view.status, view.error, view.worker_id = status, lead.error, lead.worker_id
    view.attempt, view.retry_base = lead.attempt, lead.retry_base
    view.retry, view.takeovers = lead.retry, lead.takeovers
    starts = [each.started_at for each in iterations if each.started_at is not None]
    ends = [each.completed_at for each in iterations if each.completed_at is not None]
    view.started_at = min(starts, default=None)
    view.completed_at = max(ends, default=None) if status in TERMINAL_NODE_STATUSES else None


def _summed_as(status: NodeStatus) -> NodeStatus:
    return status if status in TERMINAL_NODE_STATUSES or status is NodeStatus.WAITING else NodeStatus.RUNNING


def _use_late_results(views: Iterable[NodeView]) -> None:
    """A partial retry reopened the run: cancelled nodes resume from where they were, or from their late result."""
    for view in views:
        if view.before_cancel is not None:
            late, view.late = view.late, None
            view.status, view.before_cancel, view.completed_at = view.before_cancel, None, None
            if late is not None:
                _apply_to_node(view, late)
        _use_late_results(view.iterations.values())


def retry_count(rows: Iterable[LogRow]) -> int:
    """How many partial retries the run has had."""
    return sum(
        1
        for r in rows
        if r.node_id is None
        and r.event_type == EventType.RUN_STATUS
        and (r.payload or {}).get("reason") == RETRY_REASON
    )


def unfinished_nodes(rows: Iterable[LogRow]) -> list[tuple[str, str, int]]:
    """(node, iteration, attempt) of every node whose rows leave it short of a terminal status."""
    unfinished: list[tuple[str, str, int]] = []
    for node_id, view in _fold_rows(rows)[0].items():
        for iteration, each in (("", view), *view.iterations.items()):
            if each.status not in TERMINAL_NODE_STATUSES and each.status is not NodeStatus.PENDING:
                unfinished.append((node_id, iteration, each.attempt))
    return unfinished


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
    retry: int = 0
    """How many partial retries of the run came before this attempt (0: the run's first try)."""
    attempt_in_retry: int = 0
    """Its number within that retry, as the run view counts it (``NodeView.attempt_in_retry``)."""


def _last_bar(bars: dict[tuple[str, str, int], TimelineRow], node_id: str, iteration: str) -> TimelineRow | None:
    mine = [bar for (node, it, _), bar in bars.items() if node == node_id and it == iteration]
    return max(mine, key=lambda bar: bar.attempt, default=None)


def timeline_rows(rows: Iterable[LogRow], run: InstanceRecord) -> list[TimelineRow]:
    """Fold log rows into one row per (node, iteration, attempt), in the order the attempts began."""
    rows = list(rows)
    bars: dict[tuple[str, str, int], TimelineRow] = {}
    counters: dict[tuple[str, str], NodeView] = {}  # the run view's own fold, for its retry counting
    for row in rows:
        if row.node_id is None or row.event_type == EventType.SYSTEM_SET:
            continue  # a loop's ctx.loop rows and a call's record: no attempt of a node
        counter = counters.setdefault((row.node_id, row.iteration), NodeView())
        _apply_to_node(counter, row)
        key = (row.node_id, row.iteration, row.node_attempt)
        bar = bars.get(key)
        if bar is None:
            bar = bars[key] = TimelineRow(row.node_id, row.iteration, row.node_attempt, NodeStatus.PENDING, None, None)
        if counter.attempt == row.node_attempt:
            bar.retry, bar.attempt_in_retry = counter.retry, counter.attempt_in_retry
        _apply_to_bar(bar, row)
        if row.event_type == EventType.NODE_STARTED:  # an attempt still running when the next one starts
            lost = bars.get((row.node_id, row.iteration, row.node_attempt - 1))
            if lost is not None and lost.status is NodeStatus.RUNNING:
                lost.status, lost.completed_at, lost.taken_over = NodeStatus.FAILED, row.created_at, True
    for wait in delay_waits(rows):  # a delay's bar lasts until it falls due (storage/delay_fold.py)
        bar = _last_bar(bars, wait.node_id, wait.iteration)
        if bar is not None and bar.status is NodeStatus.COMPLETED:
            bar.status, bar.completed_at = waiting_status(wait), wait.ended_at
    result = list(bars.values())
    if run.status in TERMINAL_RUN_STATUSES:  # the run has ended: no bar is left open (SPEC §2)
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
    elif event == EventType.NODE_CANCELLED:
        bar.status = NodeStatus.CANCELLED
        bar.completed_at = row.created_at
    elif bar.status is NodeStatus.CANCELLED:
        return  # a late result: recorded, but the attempt was cancelled
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
