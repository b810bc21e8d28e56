"""Partial retry planned from log rows alone: what runs again, what resumes, what stays."""

from __future__ import annotations

from flowdeck.domain.graph import Graph
from flowdeck.engine.retry_plan import plan_retry
from flowdeck.storage.records import LogRow
from tests.support.graphs import definition, edge, end, node

HANDLES = {"step": "success", "start": "default", "loop": "loop"}


def row(node_id: str | None, event: str, iteration: str = "", attempt: int = 1, handle: str | None = None) -> LogRow:
    payload = {"handle": handle} if event == "NODE_COMPLETED" else None
    return LogRow(0, "run", node_id, iteration, event, None, None, payload, None, attempt, 0.0)


def loop_graph(concurrency: int) -> Graph:
    d = definition(
        [
            node("start", "start"),
            node("each", "loop", config={"items": [], "concurrency": concurrency}),
            node("body"),
            end(),
        ],
        [edge("start", "each"), edge("each", "body", "loop"), edge("each", "end", "done")],
    )
    return Graph.from_json(d, HANDLES)


def ran(iteration: str, *, completed: bool, attempt: int = 1) -> list[LogRow]:
    rows = [row("body", "NODE_DISPATCHED", iteration, attempt), row("body", "NODE_STARTED", iteration, attempt)]
    if completed:
        rows.append(row("body", "NODE_COMPLETED", iteration, attempt, "success"))
    else:
        rows.append(row("body", "NODE_FAILED", iteration, attempt))
    return rows


def test_a_failed_iteration_runs_again_and_the_loop_refills_its_concurrency() -> None:
    rows = [
        row("start", "NODE_DISPATCHED"),
        row("start", "NODE_COMPLETED", handle="default"),
        row("each", "NODE_DISPATCHED"),
        row("each", "NODE_STARTED"),
        *(row("each", "SYSTEM_SET", str(i)) for i in range(5)),  # ctx.loop rows of every item, started or not
        *ran("0", completed=True),
        *ran("1", completed=True),
        *ran("2", completed=False),
    ]
    plan = plan_retry(loop_graph(concurrency=2), rows, {("each", ""): (5, 1, 1)})
    assert plan.dispatch == [("2", "body", 2)]  # the failed iteration, at its next attempt
    assert plan.loop_finished == {("each", ""): 2}  # iteration 1 finished late: it counts now
    assert plan.start_iterations == [("each", "", 3)]  # two in flight again: 2 (retried) and 3
    assert plan.complete_loops == []


def test_a_loop_whose_last_iteration_finished_late_completes_on_retry() -> None:
    rows = [
        row("start", "NODE_COMPLETED", handle="default"),
        row("each", "NODE_DISPATCHED"),
        *ran("0", completed=True),
        *ran("1", completed=True),
    ]
    plan = plan_retry(loop_graph(concurrency=1), rows, {("each", ""): (2, 1, 1)})
    assert plan.dispatch == []
    assert plan.complete_loops == [("each", "")]


def test_completed_nodes_keep_their_outputs_and_interrupted_ones_run_again() -> None:
    d = definition(
        [node("start", "start"), node("a"), node("b"), end()], [edge("start", "a"), edge("a", "b"), edge("b", "end")]
    )
    rows = [
        row("start", "NODE_COMPLETED", handle="default"),
        row("a", "NODE_COMPLETED", handle="success"),
        row("b", "NODE_DISPATCHED", attempt=3),
        row("b", "NODE_STARTED", attempt=3),
    ]
    plan = plan_retry(Graph.from_json(d, HANDLES), rows, {})
    assert plan.dispatch == [("", "b", 4)]
