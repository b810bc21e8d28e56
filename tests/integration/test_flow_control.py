"""Flow control on a workflow (issue 23 item 4): options.concurrency with each strategy, options.debounce and
priority, on SQLite and PostgreSQL, with two engines (two workers, two connection pools) on one database."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from typing import Any

import pytest

from flowdeck.domain.statuses import RunStatus
from flowdeck.engine.engine import Engine
from flowdeck.engine.flow_control import FlowKeyError, waiting_reason
from flowdeck.storage.database import Database
from flowdeck.storage.flow import run_flow_of
from flowdeck.storage.records import InstanceRecord
from tests.support.graphs import definition, edge, end, node
from tests.support.handlers import make_test_registry


def _sleeper(seconds: float, **options: Any) -> dict[str, Any]:
    return definition(
        [node("start", "start"), node("work", config={"sleep": seconds}), end()],
        [edge("start", "work"), edge("work", "end", "success")],
        **options,
    )


def _engine(db: Database, step: float = 1.0) -> Engine:
    return Engine(db, make_test_registry(), lease_seconds=5.0, poll_interval=0.05, priority_step_seconds=step)


@pytest.fixture
async def engines(db: Database) -> AsyncIterator[tuple[Engine, Engine]]:
    first, second = _engine(db), _engine(db)
    await first.start()
    await second.start()
    try:
        yield first, second
    finally:
        await first.stop()
        await second.stop()


async def _finished(engine: Engine, run_ids: list[str], timeout: float = 60.0) -> list[InstanceRecord]:
    return [await engine.wait_for_run(run_id, timeout) for run_id in run_ids]


async def _status(engine: Engine, run_id: str) -> RunStatus:
    instance = await engine.state.get_instance(run_id)
    assert instance is not None
    return instance.status


async def _wait_for_status(engine: Engine, run_id: str, status: RunStatus, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while await _status(engine, run_id) is not status:
        assert time.monotonic() < deadline, f"run {run_id} never became {status.value}"
        await asyncio.sleep(0.02)


def _most_at_once(runs: list[InstanceRecord]) -> int:
    """The most runs that were RUNNING at the same moment (from their start and end times)."""
    moments = sorted([(r.started_at or 0.0, 1) for r in runs] + [(r.completed_at or 0.0, -1) for r in runs])
    most = current = 0
    for _, change in moments:
        current += change
        most = max(most, current)
    return most


async def _reason(db: Database, engine: Engine, run_id: str) -> str | None:
    status = await _status(engine, run_id)
    async with db.read() as conn:
        row = await run_flow_of(conn, run_id)
    return waiting_reason(row, status)


async def test_queue_runs_one_at_a_time_per_key_in_order_across_two_engines(
    db: Database, engines: tuple[Engine, Engine]
) -> None:
    first, second = engines
    tenant_id = await first.tenants.ensure("queue")
    options = {"concurrency": {"limit": 1, "key": "{{ ctx.input.customer }}", "strategy": "queue"}}
    workflow_id = (await first.create_workflow(tenant_id, _sleeper(0.3, **options))).id
    a_runs = []
    for i in range(4):
        engine = (first, second)[i % 2]
        a_runs.append(await engine.start_workflow_run(tenant_id, workflow_id, {"customer": "acme"}))
    b_run = await second.start_workflow_run(tenant_id, workflow_id, {"customer": "bolt"})

    assert await _status(first, a_runs[1]) is RunStatus.PENDING
    reason = await _reason(db, first, a_runs[1])
    assert reason is not None and "options.concurrency allows 1 run(s)" in reason and "'acme'" in reason

    finished = await _finished(first, [*a_runs, b_run])
    assert {r.status for r in finished} == {RunStatus.COMPLETED}
    acme = finished[:4]
    assert _most_at_once(acme) == 1
    assert [r.id for r in sorted(acme, key=lambda r: r.started_at or 0.0)] == a_runs  # in the order they came
    assert _most_at_once(finished) == 2  # another key's run did not wait for acme's


async def test_a_limit_is_never_passed_when_two_engines_start_runs_at_once(
    db: Database, engines: tuple[Engine, Engine]
) -> None:
    first, second = engines
    tenant_id = await first.tenants.ensure("burst")
    workflow_id = (await first.create_workflow(tenant_id, _sleeper(0.2, concurrency={"limit": 2}))).id
    run_ids = await asyncio.gather(
        *((first, second)[i % 2].start_workflow_run(tenant_id, workflow_id, {"i": i}) for i in range(12))
    )
    finished = await _finished(first, list(run_ids))
    assert {r.status for r in finished} == {RunStatus.COMPLETED}
    assert _most_at_once(finished) == 2


async def test_cancel_newest_cancels_the_new_run_at_once_saying_why(
    db: Database, engines: tuple[Engine, Engine]
) -> None:
    first, second = engines
    tenant_id = await first.tenants.ensure("newest")
    options = {"concurrency": {"limit": 1, "strategy": "cancel_newest"}}
    workflow_id = (await first.create_workflow(tenant_id, _sleeper(0.5, **options))).id
    running = await first.start_workflow_run(tenant_id, workflow_id)
    refused = await second.start_workflow_run(tenant_id, workflow_id)

    instance = await second.state.get_instance(refused)
    assert instance is not None and instance.status is RunStatus.CANCELLED
    assert (
        instance.error is not None
        and "cancel_newest" in instance.error
        and "options.concurrency.limit (1)" in instance.error
    )
    assert (await first.wait_for_run(running, 30)).status is RunStatus.COMPLETED


async def test_cancel_in_progress_cancels_the_oldest_running_run_naming_the_new_one(
    db: Database, engines: tuple[Engine, Engine]
) -> None:
    first, second = engines
    tenant_id = await first.tenants.ensure("progress")
    options = {"concurrency": {"limit": 1, "key": "{{ ctx.input.k }}", "strategy": "cancel_in_progress"}}
    workflow_id = (await first.create_workflow(tenant_id, _sleeper(1.0, **options))).id
    old = await first.start_workflow_run(tenant_id, workflow_id, {"k": 1})
    await _wait_for_status(first, old, RunStatus.RUNNING)
    other_key = await first.start_workflow_run(tenant_id, workflow_id, {"k": 2})
    new = await second.start_workflow_run(tenant_id, workflow_id, {"k": 1})

    cancelled = await first.wait_for_run(old, 30)
    assert cancelled.status is RunStatus.CANCELLED
    assert cancelled.error is not None and f"cancelled by run {new}" in cancelled.error
    finished = await _finished(first, [new, other_key])
    assert [r.status for r in finished] == [RunStatus.COMPLETED, RunStatus.COMPLETED]


async def test_debounce_collapses_starts_into_the_last_one(db: Database, engines: tuple[Engine, Engine]) -> None:
    first, second = engines
    tenant_id = await first.tenants.ensure("debounce")
    options = {"debounce": {"seconds": 0.6, "key": "{{ ctx.input.doc }}"}}
    workflow_id = (await first.create_workflow(tenant_id, _sleeper(0.0, **options))).id
    x_runs = [
        await (first, second)[i % 2].start_workflow_run(tenant_id, workflow_id, {"doc": "x", "i": i}) for i in range(3)
    ]
    y_run = await second.start_workflow_run(tenant_id, workflow_id, {"doc": "y"})
    reason = await _reason(db, first, x_runs[-1])
    assert reason is not None and reason.startswith("debounced")

    finished = await _finished(first, [*x_runs, y_run])
    replaced, last, other = finished[:2], finished[2], finished[3]
    for index, run in enumerate(replaced):  # each names the start that replaced it
        assert run.status is RunStatus.CANCELLED
        assert run.error is not None and f"replaced by run {x_runs[index + 1]}" in run.error
    assert last.status is RunStatus.COMPLETED and other.status is RunStatus.COMPLETED
    assert (last.started_at or 0.0) >= last.created_at + 0.6  # it starts `seconds` after the last start


async def test_higher_priority_is_taken_first(db: Database, engines: tuple[Engine, Engine]) -> None:
    first, second = engines
    tenant_id = await first.tenants.ensure("priority")
    workflow_id = (await first.create_workflow(tenant_id, _sleeper(0.3, concurrency={"limit": 1}))).id
    blocker = await first.start_workflow_run(tenant_id, workflow_id)
    low = await first.start_workflow_run(tenant_id, workflow_id, priority=10)
    high = await second.start_workflow_run(tenant_id, workflow_id, priority=90)
    finished = await _finished(first, [blocker, low, high])
    assert {r.status for r in finished} == {RunStatus.COMPLETED}
    assert (finished[2].started_at or 0.0) < (finished[1].started_at or 0.0)


async def test_age_lifts_a_low_priority_run_so_it_is_not_starved(db: Database) -> None:
    """One priority point is worth FLOWDECK_PRIORITY_STEP_SECONDS (here 1 ms) of waiting: a run of priority 1
    queued 0.3 s before one of priority 100 goes first (99 points = 0.099 s < 0.3 s)."""
    engine = _engine(db, step=0.001)
    await engine.start()
    try:
        tenant_id = await engine.tenants.ensure("aging")
        workflow_id = (await engine.create_workflow(tenant_id, _sleeper(0.8, concurrency={"limit": 1}))).id
        blocker = await engine.start_workflow_run(tenant_id, workflow_id)
        low = await engine.start_workflow_run(tenant_id, workflow_id, priority=1)
        await asyncio.sleep(0.3)
        high = await engine.start_workflow_run(tenant_id, workflow_id, priority=100)
        assert await _status(engine, high) is RunStatus.PENDING  # the blocker still runs: both queue
        finished = await _finished(engine, [blocker, low, high])
        assert (finished[1].started_at or 0.0) < (finished[2].started_at or 0.0)
    finally:
        await engine.stop()


async def test_a_cancelled_queued_run_leaves_the_queue(db: Database, engines: tuple[Engine, Engine]) -> None:
    first, _ = engines
    tenant_id = await first.tenants.ensure("leave")
    workflow_id = (await first.create_workflow(tenant_id, _sleeper(0.3, concurrency={"limit": 1}))).id
    blocker = await first.start_workflow_run(tenant_id, workflow_id)
    queued = await first.start_workflow_run(tenant_id, workflow_id)
    after = await first.start_workflow_run(tenant_id, workflow_id)
    assert await first.cancel_run(queued)
    finished = await _finished(first, [blocker, queued, after])
    assert [r.status for r in finished] == [RunStatus.COMPLETED, RunStatus.CANCELLED, RunStatus.COMPLETED]
    assert await _reason(db, first, queued) is None


async def test_a_key_that_fails_on_the_input_refuses_the_start_naming_the_field(db: Database) -> None:
    engine = _engine(db)
    tenant_id = await engine.tenants.ensure("badkey")
    options = {"concurrency": {"limit": 1, "key": "{{ ctx.input.customer.id }}"}}
    workflow_id = (await engine.create_workflow(tenant_id, _sleeper(0.0, **options))).id
    with pytest.raises(FlowKeyError) as raised:
        await engine.start_workflow_run(tenant_id, workflow_id, {"other": 1})
    assert raised.value.field == "options.concurrency.key"


async def test_sub_workflow_calls_queue_for_the_called_workflows_limit(engines: tuple[Engine, Engine]) -> None:
    """A loop calls a workflow limited to 1 at once, 4 iterations together: the calls queue, one child runs at
    a time, and each caller goes on when its own child has finished."""
    first, _ = engines
    tenant_id = await first.tenants.ensure("calls")
    child_id = (await first.create_workflow(tenant_id, _sleeper(0.2, concurrency={"limit": 1}))).id
    parent = definition(
        [
            node("start", "start"),
            node("each", "loop", config={"items": [1, 2, 3, 4], "concurrency": 4}),
            node("call", "workflow", config={"workflowId": child_id, "input": {}}),
            end(),
        ],
        [edge("start", "each"), edge("each", "call", "loop"), edge("each", "end", "done")],
    )
    parent_id = (await first.create_workflow(tenant_id, parent)).id
    root = await first.start_workflow_run(tenant_id, parent_id)
    assert (await first.wait_for_run(root, 60)).status is RunStatus.COMPLETED
    children = list(await first.children.descendants(root))
    finished = await _finished(first, children)
    assert len(finished) == 4 and {r.status for r in finished} == {RunStatus.COMPLETED}
    assert _most_at_once(finished) == 1


async def test_a_slot_freed_here_admits_the_next_run_at_once_and_only_such_runs_ends_read_the_queue(
    db: Database,
) -> None:
    """With no poll for a minute, a queued run still starts as soon as the run holding its slot ends here; a
    run whose workflow has no options.concurrency held no slot, so its end reads no queue."""
    engine = Engine(db, make_test_registry(), lease_seconds=5.0, poll_interval=60.0)
    await engine.start()
    try:
        tenant = await engine.tenants.ensure("acme")
        limited = await engine.create_workflow(tenant, _sleeper(0.2, concurrency={"limit": 1}))
        free = await engine.create_workflow(tenant, _sleeper(0.0))
        holder = await engine.start_workflow_run(tenant, limited.id, {})
        queued = await engine.start_workflow_run(tenant, limited.id, {})
        plain = await engine.start_workflow_run(tenant, free.id, {})
        done = await _finished(engine, [holder, queued, plain], timeout=20.0)  # not the minute's poll
        assert [r.status for r in done] == [RunStatus.COMPLETED] * 3
        assert engine.plans.may_hold_slot(holder) and engine.plans.may_hold_slot(queued)
        assert not engine.plans.may_hold_slot(plain)
        assert engine.plans.may_hold_slot("a run this process never loaded")  # unknown here: it may
    finally:
        await engine.stop()
