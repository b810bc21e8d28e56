"""Terminal means terminal (SPEC §2, §4): when a run fails, is cancelled or times out, every node not
yet terminal becomes CANCELLED with a NODE_CANCELLED row — loops and their iterations included — and a
partial retry still runs the cancelled nodes again."""

from __future__ import annotations

import asyncio
import time
from typing import Any

from flowdeck.domain.statuses import TERMINAL_NODE_STATUSES, NodeStatus
from flowdeck.engine.engine import Engine
from flowdeck.engine.projection import NodeView
from flowdeck.engine.publisher import NodeUpdate
from flowdeck.storage.database import Database
from tests.support.clock import FakeClock
from tests.support.graphs import definition, edge, end, node
from tests.support.handlers import make_test_registry
from tests.support.runs import Outcome, read_outcome, start


def _all_views(nodes: dict[str, NodeView]) -> list[tuple[str, str, NodeView]]:
    views: list[tuple[str, str, NodeView]] = []
    for node_id, view in nodes.items():
        if view.attempt:
            views.append((node_id, "", view))
        views += [(node_id, it, v) for it, v in view.iterations.items() if v.status is not NodeStatus.PENDING]
    return views


def _unfinished(outcome: Outcome) -> list[tuple[str, str, str]]:
    return [(n, it, v.status.value) for n, it, v in _all_views(outcome.nodes) if v.status not in TERMINAL_NODE_STATUSES]


def _cancelled_rows(outcome: Outcome) -> set[tuple[str | None, str]]:
    return {(r.node_id, r.iteration) for r in outcome.rows if r.event_type == "NODE_CANCELLED"}


async def _wait_for_row(engine: Engine, instance_id: str, event_type: str, node_id: str, iteration: str = "") -> None:
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        rows = await engine.state.read_log(instance_id)
        if any(r.event_type == event_type and r.node_id == node_id and r.iteration == iteration for r in rows):
            return
        await asyncio.sleep(0.02)
    raise AssertionError(f"no {event_type} for {node_id}[{iteration}]")


def _failing_loop() -> dict[str, Any]:
    """Item 0's body is slow, item 1's fails at once: the run fails with iteration 0 in flight."""
    body_config = {
        "sleep": "{{ 0.6 if ctx.loop.index == 0 else 0 }}",
        "failTimes": "{{ 9 if ctx.loop.index == 1 else 0 }}",
        "retryable": False,
    }
    return definition(
        [
            node("start", "start"),
            node("each", "loop", config={"items": [0, 1, 2], "concurrency": 2}),
            node("work", config=body_config, retry={"maxAttempts": 1}),
            node("after"),
            end(params={"result": "{{ ctx.each }}"}),
        ],
        [edge("start", "each"), edge("each", "work", "loop"), edge("work", "after"), edge("each", "end", "done")],
    )


async def test_a_run_failing_inside_a_loop_cancels_the_loop_and_its_body(engine: Engine, tenant_id: str) -> None:
    instance_id = await start(engine, tenant_id, _failing_loop())
    run = await engine.wait_for_run(instance_id, 10)
    assert run.status == "FAILED"
    outcome = await read_outcome(engine, instance_id)
    assert _unfinished(outcome) == []  # nothing left RUNNING, DISPATCHED or RETRYING
    assert outcome.status_of("each") == "CANCELLED"  # the loop itself, not RUNNING forever
    assert outcome.nodes["work"].iterations["0"].status is NodeStatus.CANCELLED  # the slow iteration in flight
    assert outcome.nodes["work"].iterations["1"].status is NodeStatus.FAILED
    assert ("each", "") in _cancelled_rows(outcome) and ("work", "0") in _cancelled_rows(outcome)
    cancelled = next(r for r in outcome.rows if r.event_type == "NODE_CANCELLED" and r.node_id == "each")
    assert cancelled.node_status == "CANCELLED" and cancelled.node_attempt == 1
    assert "work" in cancelled.payload["reason"]  # says why: the run's failure
    # The slow body node finishes late: recorded, but the node stays cancelled and starts nothing.
    await _wait_for_row(engine, instance_id, "NODE_COMPLETED", "work", "0")
    late = await read_outcome(engine, instance_id)
    assert late.nodes["work"].iterations["0"].status is NodeStatus.CANCELLED
    assert "0" not in late.nodes.get("after", NodeView()).iterations
    assert await engine.state.count_jobs(instance_id) == 0


async def test_cancel_marks_running_and_queued_nodes_cancelled(engine: Engine, tenant_id: str) -> None:
    d = definition(
        [
            node("start", "start"),
            node("long", config={"sleep": 5}),
            node("wait", "delay", config={"seconds": 60}),
            node("after_wait"),
            end(),
        ],
        [
            *(edge("start", "long"), edge("start", "wait"), edge("wait", "after_wait")),
            *(edge("long", "end"), edge("after_wait", "end")),
        ],
    )
    instance_id = await start(engine, tenant_id, d)
    await _wait_for_row(engine, instance_id, "NODE_STARTED", "long")
    await _wait_for_row(engine, instance_id, "NODE_DISPATCHED", "after_wait")  # queued behind the delay
    with engine.publisher.subscribe() as updates:
        assert await engine.cancel_run(instance_id)
        run = await engine.wait_for_run(instance_id, 5)
        announced = {(u.node_id, u.status) for u in _drain(updates.queue) if isinstance(u, NodeUpdate)}
    assert run.status == "CANCELLED"
    outcome = await read_outcome(engine, instance_id)
    assert _unfinished(outcome) == []
    assert _cancelled_rows(outcome) == {("long", ""), ("after_wait", "")}
    assert outcome.status_of("long") == "CANCELLED" and outcome.status_of("after_wait") == "CANCELLED"
    assert {("long", NodeStatus.CANCELLED), ("after_wait", NodeStatus.CANCELLED)} <= announced  # live view too


def _drain(queue: Any) -> list[Any]:
    items = []
    while not queue.empty():
        items.append(queue.get_nowait())
    return items


async def test_a_timed_out_run_cancels_its_queued_node(db: Database) -> None:
    clock = FakeClock()
    engine = Engine(db, make_test_registry(), clock=clock)  # no worker: the start node stays queued
    tenant_id = await engine.tenants.ensure("acme")
    d = definition([node("start", "start"), end()], [edge("start", "end")], timeoutSeconds=30)
    instance_id = await start(engine, tenant_id, d)
    clock.advance(31)
    await engine.worker.sweep()
    outcome = await read_outcome(engine, instance_id)
    assert outcome.run.status == "FAILED" and "timed out" in (outcome.run.error or "")
    assert outcome.status_of("start") == "CANCELLED"
    row = next(r for r in outcome.rows if r.event_type == "NODE_CANCELLED")
    assert row.node_id == "start" and row.payload["reason"] == outcome.run.error


async def test_partial_retry_runs_the_cancelled_nodes_again(engine: Engine, tenant_id: str) -> None:
    d = definition(
        [
            node("start", "start"),
            node(
                "boom", config={"failTimes": 1, "sleep": 0.2}, errorHandling="fail_workflow", retry={"maxAttempts": 1}
            ),
            node("wait", "delay", config={"seconds": 30}),
            node("after_wait"),
            end(params={"after": "{{ ctx.after_wait.attempt }}"}),
        ],
        [
            *(edge("start", "boom"), edge("start", "wait"), edge("wait", "after_wait")),
            *(edge("boom", "end"), edge("after_wait", "end")),
        ],
    )
    instance_id = await start(engine, tenant_id, d)
    assert (await engine.wait_for_run(instance_id, 10)).status == "FAILED"
    failed = await read_outcome(engine, instance_id)
    assert _unfinished(failed) == []
    cancelled = {node_id for node_id, _ in _cancelled_rows(failed)}
    assert cancelled  # the delay or the node queued behind it was cut short
    assert await engine.retry_run(instance_id)
    run = await engine.wait_for_run(instance_id, 10)
    assert run.status == "COMPLETED"
    outcome = await read_outcome(engine, instance_id)
    assert {n: v.status.value for n, v in outcome.nodes.items()} == dict.fromkeys(outcome.nodes, "COMPLETED")
    for node_id in cancelled:  # each cancelled node ran again, at its next attempt
        assert outcome.nodes[node_id].attempt == 2


async def test_retry_on_the_latest_version_forgets_removed_nodes_and_runs_new_ones(
    engine: Engine, tenant_id: str
) -> None:
    v1 = definition(
        [node("start", "start"), node("a"), node("b", config={"failTimes": 9}, retry={"maxAttempts": 1}), end()],
        [edge("start", "a"), edge("a", "b"), edge("b", "end")],
    )
    v2 = definition(
        [node("start", "start"), node("a"), node("c"), end(params={"via": "{{ ctx.c.node }}"})],
        [edge("start", "a"), edge("a", "c"), edge("c", "end")],
    )
    workflow = await engine.create_workflow(tenant_id, v1)
    instance_id = await engine.start_workflow_run(tenant_id, workflow.id)
    assert (await engine.wait_for_run(instance_id, 10)).status == "FAILED"
    await engine.save_workflow(tenant_id, workflow.id, 1, v2)
    assert await engine.retry_run(instance_id, "latest") == ["c"]
    run = await engine.wait_for_run(instance_id, 10)
    assert run.status == "COMPLETED" and run.output == {"via": "c"} and run.workflow_version == 2
    outcome = await read_outcome(engine, instance_id)
    assert outcome.count("NODE_STARTED", "a") == 1  # its output was kept
    assert outcome.count("NODE_STARTED", "b") == 1  # gone from the new version: not run again
