"""Retries, fail-fast, cancel, partial retry, run timeout, durable delays, duplicates and dead workers."""

from __future__ import annotations

import asyncio
import time
from itertools import pairwise

import pytest

from flowdeck.domain.statuses import NodeStatus, RunStatus
from flowdeck.engine.engine import Engine
from flowdeck.engine.orchestrator import Completed
from flowdeck.engine.projection import fold_nodes
from flowdeck.engine.publisher import NodeUpdate
from flowdeck.storage.database import Database
from flowdeck.storage.log_fold import timeline_rows
from tests.support.clock import FakeClock
from tests.support.graphs import definition, edge, end, linear, node
from tests.support.handlers import make_test_registry
from tests.support.runs import read_outcome, rescue, run_to_end, start

FAST_RETRY = {"maxAttempts": 3, "backoffSeconds": 0.1, "maxBackoffSeconds": 0.15}


def _chain(*middle: dict, params: dict | None = None, **options: object) -> dict:
    ids = ["start", *(m["id"] for m in middle), "end"]
    return definition(
        [node("start", "start"), *middle, end(params=params)],
        [edge(a, b) for a, b in pairwise(ids)],
        **options,
    )


async def test_retry_then_succeed_follows_the_backoff_schedule(engine: Engine, tenant_id: str) -> None:
    outcome = await run_to_end(engine, tenant_id, _chain(node("flaky", config={"failTimes": 2}, retry=FAST_RETRY)))
    assert outcome.run.status == "COMPLETED"
    assert outcome.nodes["flaky"].attempt == 3
    failures = [r for r in outcome.rows if r.event_type == "NODE_FAILED"]
    assert [(r.node_attempt, r.payload["retry"]) for r in failures] == [(1, True), (2, True)]
    waits = [r.payload["nextAttemptAt"] - r.created_at for r in failures]
    assert 0.1 <= waits[0] <= 0.11  # backoffSeconds * 2^0, plus at most 10% jitter
    assert 0.15 <= waits[1] <= 0.165  # 0.2 capped at maxBackoffSeconds
    starts = {
        r.node_attempt: r.created_at for r in outcome.rows if r.event_type == "NODE_STARTED" and r.node_id == "flaky"
    }
    assert starts[2] - failures[0].created_at >= 0.1
    assert set(starts) == {1, 2, 3}


async def test_retries_exhausted_without_error_edge_fail_the_run(engine: Engine, tenant_id: str) -> None:
    outcome = await run_to_end(engine, tenant_id, _chain(node("bad", config={"failTimes": 9}, retry=FAST_RETRY)))
    assert outcome.run.status == "FAILED"
    assert outcome.run.error == "node 'bad' failed after 3 attempts: planned failure on attempt 3"
    assert outcome.status_of("bad") == "FAILED"
    assert "end" not in outcome.nodes


async def test_non_retryable_errors_are_not_retried(engine: Engine, tenant_id: str) -> None:
    outcome = await run_to_end(
        engine, tenant_id, _chain(node("bad", config={"failTimes": 9, "retryable": False}, retry=FAST_RETRY))
    )
    assert outcome.run.status == "FAILED"
    assert outcome.count("NODE_FAILED", "bad") == 1


async def test_fail_fast_dispatches_nothing_new_and_records_late_results(engine: Engine, tenant_id: str) -> None:
    d = definition(
        [
            node("start", "start"),
            node(
                "boom", config={"failTimes": 9, "sleep": 0.1}, errorHandling="fail_workflow", retry={"maxAttempts": 1}
            ),
            node("slow", config={"sleep": 0.4}),
            node("after_slow"),
            node("join"),
            end(),
        ],
        [
            edge("start", "boom"),
            edge("start", "slow"),
            edge("slow", "after_slow"),
            edge("boom", "join"),
            edge("after_slow", "join"),
            edge("join", "end"),
        ],
    )
    instance_id = await start(engine, tenant_id, d)
    run = await engine.wait_for_run(instance_id, 10)
    assert run.status == "FAILED"
    assert run.completed_at is not None and run.started_at is not None
    assert run.completed_at - run.started_at < 0.35  # failed at once, not after the slow branch
    # The late result's decision writes its row and whatever it starts in one transaction: once the
    # row is there, anything it started would be there too.
    await _wait_for_event(engine, instance_id, "NODE_COMPLETED", "slow")
    outcome = await read_outcome(engine, instance_id)
    assert outcome.count("NODE_COMPLETED", "slow") == 1  # the late result is recorded...
    assert outcome.status_of("slow") == "CANCELLED"  # ...after the run's end cancelled the node (terminal)
    assert "after_slow" not in outcome.nodes and "join" not in outcome.nodes  # ...and starts nothing
    assert outcome.run.status == "FAILED"


async def test_cancel_stops_the_run_and_its_running_node(engine: Engine, tenant_id: str) -> None:
    instance_id = await start(engine, tenant_id, _chain(node("long", config={"sleep": 5})))
    await _wait_for_event(engine, instance_id, "NODE_STARTED", "long")
    assert await engine.cancel_run(instance_id) is True
    run = await engine.wait_for_run(instance_id, 5)
    assert run.status == "CANCELLED"
    deadline = time.monotonic() + 5
    while engine.worker.active_jobs and time.monotonic() < deadline:  # the cancel reaches the task
        await asyncio.sleep(0.01)
    assert engine.worker.active_jobs == []
    assert await engine.state.count_jobs(instance_id) == 0
    outcome = await read_outcome(engine, instance_id)
    assert outcome.status_of("long") == "CANCELLED"
    assert await engine.cancel_run(instance_id) is False  # already finished


async def test_partial_retry_runs_only_the_failed_nodes(engine: Engine, tenant_id: str) -> None:
    d = _chain(
        node("first"),
        node("second", config={"failTimes": 1}, retry={"maxAttempts": 1}),
        params={"first": "{{ ctx.first.node }}", "second": "{{ ctx.second.attempt }}"},
    )
    instance_id = await start(engine, tenant_id, d)
    assert (await engine.wait_for_run(instance_id, 10)).status == "FAILED"
    assert await engine.retry_run(instance_id) == ["second"]
    run = await engine.wait_for_run(instance_id, 10)
    assert run.status == "COMPLETED"
    assert run.output == {"first": "first", "second": 2}
    outcome = await read_outcome(engine, instance_id)
    assert outcome.count("NODE_STARTED", "first") == 1  # completed outputs were kept, not recomputed
    assert outcome.count("NODE_STARTED", "second") == 2
    assert [r.payload["status"] for r in outcome.rows if r.event_type == "RUN_STATUS"] == [
        "RUNNING",
        "FAILED",
        "RUNNING",
        "COMPLETED",
    ]


async def test_retry_of_a_run_that_did_not_fail_is_refused(engine: Engine, tenant_id: str) -> None:
    from flowdeck.engine.orchestrator import RunStateError

    outcome = await run_to_end(engine, tenant_id, linear(1))
    with pytest.raises(RunStateError, match="only a FAILED run can be retried"):
        await engine.retry_run(outcome.run.id)


async def test_run_timeout_fails_the_run_with_the_reason(db: Database) -> None:
    clock = FakeClock()
    engine = Engine(db, make_test_registry(), clock=clock)  # no worker runs: the start node stays queued
    tenant_id = await engine.tenants.ensure("acme")
    instance_id = await start(engine, tenant_id, _chain(node("long"), timeoutSeconds=30))
    clock.advance(29)
    await engine.worker.sweep()
    assert (await engine.state.get_instance(instance_id)).status == "RUNNING"  # type: ignore[union-attr]
    clock.advance(2)
    await engine.worker.sweep()
    run = await engine.wait_for_run(instance_id, 5)
    assert run.status == "FAILED"
    assert run.error is not None and "timed out" in run.error and "timeoutSeconds" in run.error
    outcome = await read_outcome(engine, instance_id)
    reasons = [r.payload.get("reason") for r in outcome.rows if r.event_type == "RUN_STATUS"]
    assert reasons[-1] == run.error


async def test_delay_is_durable_across_a_worker_restart(db: Database, tenant_id: str, engine: Engine) -> None:
    d = _chain(node("wait", "delay", config={"seconds": 1.0}), node("after"))
    instance_id = await start(engine, tenant_id, d)
    await _wait_for_event(engine, instance_id, "NODE_COMPLETED", "wait")
    await engine.stop()  # the process goes away while the timer is pending
    stopped_at = time.time()
    assert await engine.state.count_jobs(instance_id) == 1  # the timer is a row, not a sleeping coroutine
    second = Engine(db, make_test_registry(), lease_seconds=2.0, poll_interval=0.05)
    await second.start()
    try:
        run = await second.wait_for_run(instance_id, 10)
    finally:
        await second.stop()
    assert run.status == "COMPLETED"
    outcome = await read_outcome(second, instance_id)
    delay_done = next(r.created_at for r in outcome.rows if r.event_type == "NODE_COMPLETED" and r.node_id == "wait")
    after_started = next(r.created_at for r in outcome.rows if r.event_type == "NODE_STARTED" and r.node_id == "after")
    assert after_started - delay_done >= 1.0
    assert after_started >= stopped_at


@pytest.mark.parametrize("claim_for", [None, "me"], ids=["decision", "chain-step"])
async def test_duplicate_result_delivery_changes_nothing(db: Database, claim_for: str | None) -> None:
    engine = Engine(db, make_test_registry(), lease_seconds=5)
    await engine.start(with_worker=False)  # no worker: the test delivers results by hand
    tenant_id = await engine.tenants.ensure("acme")
    instance_id = await start(engine, tenant_id, linear(2))
    [job] = await engine.state.claim_jobs("me", 10, 5)
    outcome, _ = await engine.executor.run(job)
    assert isinstance(outcome, Completed)
    follow = await engine.orchestrator.handle_result(job, outcome, claim_for=claim_for)
    assert (follow is not None) == (claim_for is not None)  # the successor is leased to its dispatcher
    rows_before = await engine.state.read_log(instance_id)
    version_before = (await engine.state.get_instance(instance_id)).version  # type: ignore[union-attr]
    assert await engine.orchestrator.handle_result(job, outcome, claim_for=claim_for) is None
    assert await engine.state.read_log(instance_id) == rows_before
    assert (await engine.state.get_instance(instance_id)).version == version_before  # type: ignore[union-attr]
    assert await engine.state.count_jobs(instance_id) == 1  # s1 queued once


async def test_a_node_whose_worker_died_is_run_again_after_its_lease(
    db: Database, tenant_id: str, engine: Engine
) -> None:
    instance_id = await start(engine, tenant_id, _chain(node("slow", config={"sleep": 0.5}), node("after")))
    await _wait_for_event(engine, instance_id, "NODE_STARTED", "slow")
    # The worker "dies": its task is gone and it never gives the lease back.
    engine.worker._stopping = True
    for task in [*engine.worker._loops, *engine.worker._current]:
        task.cancel()
    await asyncio.sleep(0.05)
    run, outcome = await rescue(db, instance_id, timeout=10)
    assert run.status == "COMPLETED"
    assert outcome.per_node("NODE_COMPLETED") == dict.fromkeys(["start", "slow", "after", "end"], 1)
    # The takeover started the next attempt, with its own NODE_STARTED row naming the new holder.
    started = [r for r in outcome.rows if r.event_type == "NODE_STARTED" and r.node_id == "slow"]
    assert [(r.node_attempt, r.payload) for r in started] == [
        (1, {"workerId": engine.worker.id}),
        (2, {"workerId": "rescuer", "takeovers": 1}),
    ]


async def _wait_for_event(engine: Engine, instance_id: str, event_type: str, node_id: str, timeout: float = 5) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        rows = await engine.state.read_log(instance_id)
        if any(r.event_type == event_type and r.node_id == node_id for r in rows):
            return
        await asyncio.sleep(0.02)
    raise AssertionError(f"no {event_type} for {node_id} within {timeout} s")


async def test_a_node_queued_behind_a_delay_is_announced_with_its_due_time(engine: Engine, tenant_id: str) -> None:
    with engine.publisher.subscribe() as updates:
        d = _chain(node("wait", "delay", config={"seconds": 0.3}), node("after"))
        instance_id = await start(engine, tenant_id, d)
        run = await engine.wait_for_run(instance_id, 10)
        assert run.status == "COMPLETED"
        seen: list[NodeUpdate] = []
        while not updates.queue.empty():
            update = await updates.get()
            if isinstance(update, NodeUpdate) and update.node_id in ("wait", "after"):
                seen.append(update)
    completed = next(u for u in seen if u.node_id == "wait" and u.status == NodeStatus.COMPLETED)
    queued = next(u for u in seen if u.node_id == "after" and u.status == NodeStatus.DISPATCHED)
    assert queued.next_attempt_at == pytest.approx(completed.at + 0.3)
    started = next(u for u in seen if u.node_id == "after" and u.status == NodeStatus.RUNNING)
    assert started.at >= queued.next_attempt_at - 0.01
    # once it fell due, the view shows the delay COMPLETED then, and its bar spans the whole wait
    rows = await engine.state.read_log(instance_id)
    view = fold_nodes(rows, run.status)["wait"]
    assert view.status is NodeStatus.COMPLETED and view.completed_at == pytest.approx(queued.next_attempt_at)
    [bar] = [b for b in timeline_rows(rows, run) if b.node_id == "wait"]
    assert bar.status is NodeStatus.COMPLETED and bar.completed_at == pytest.approx(queued.next_attempt_at)
    assert bar.started_at is not None and bar.completed_at - bar.started_at >= 0.29


async def test_a_runs_view_shows_when_a_waiting_node_starts(engine: Engine, tenant_id: str) -> None:
    slow_retry = {"maxAttempts": 2, "backoffSeconds": 30.0, "maxBackoffSeconds": 30.0}
    d = definition(
        [
            node("start", "start"),
            node("wait", "delay", config={"seconds": 60}),
            node("after"),
            node("flaky", config={"failTimes": 1}, retry=slow_retry),
            end(),
        ],
        [
            edge("start", "wait"),
            edge("wait", "after"),
            edge("after", "end"),
            edge("start", "flaky"),
            edge("flaky", "end"),
        ],
    )
    instance_id = await start(engine, tenant_id, d)
    await _wait_for_event(engine, instance_id, "NODE_COMPLETED", "wait")
    await _wait_for_event(engine, instance_id, "NODE_FAILED", "flaky")
    rows = await engine.state.read_log(instance_id)
    nodes = fold_nodes(rows, RunStatus.RUNNING)
    waited = next(r for r in rows if r.node_id == "wait" and r.event_type == "NODE_COMPLETED")
    failed = next(r for r in rows if r.node_id == "flaky" and r.event_type == "NODE_FAILED")
    # one status per state: the delay is WAITING until it falls due, its successor PENDING behind it
    assert nodes["wait"].status is NodeStatus.WAITING and nodes["wait"].completed_at is None
    assert nodes["wait"].next_attempt_at == pytest.approx(waited.created_at + 60)
    assert nodes["wait"].to_json()["nextAttemptAt"] == nodes["wait"].next_attempt_at
    assert nodes["wait"].to_json()["holds"] == ["after"]  # a late joiner knows which update ends the wait
    assert nodes["after"].status is NodeStatus.PENDING and nodes["after"].to_json().get("nextAttemptAt") is None
    assert nodes["flaky"].status is NodeStatus.RETRYING
    assert nodes["flaky"].next_attempt_at is not None and nodes["flaky"].next_attempt_at > failed.created_at
    run = await engine.state.get_instance(instance_id)
    assert run is not None
    bars = {bar.node_id: bar for bar in timeline_rows(rows, run)}
    assert bars["wait"].status is NodeStatus.WAITING and bars["wait"].completed_at is None  # no 5 ms bar
    assert await engine.cancel_run(instance_id)
