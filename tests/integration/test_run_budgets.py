"""Run budgets (issue 21): a tree of sub-workflow calls holds at most FLOWDECK_MAX_TREE_RUNS runs, counted
exactly however many calls race; a tenant's active runs are capped (FLOWDECK_TENANT_ACTIVE_RUNS), and a
schedule's start past that cap is kept as a FAILED run that says why, not lost."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from prometheus_client import generate_latest

from flowdeck.domain.schedules import Schedule
from flowdeck.domain.statuses import RunStatus
from flowdeck.engine.engine import Engine
from flowdeck.engine.run_limits import ActiveRunsGate, RunLimits, TooManyActiveRunsError
from flowdeck.engine.run_timing import RunTiming
from flowdeck.observability.metrics import Metrics
from flowdeck.runtime import open_runtime
from flowdeck.settings import Settings
from flowdeck.storage.children import count_tree_run
from flowdeck.storage.database import Database
from flowdeck.storage.notices import NoticeOutbox
from flowdeck.storage.tables import instance_logs, instances
from flowdeck.triggers.schedules import Scheduler, fire_id
from tests.support.graphs import definition, edge, end, node
from tests.support.handlers import make_test_registry

EVERY_5_MIN = "*/5 * * * *"


def _trivial() -> dict[str, Any]:
    return definition([node("start", "start"), end()], [edge("start", "end")])


def _engine(db: Database, **limits: int) -> Engine:
    return Engine(db, make_test_registry(), lease_seconds=5.0, poll_interval=0.05, limits=RunLimits(**limits))


async def _wait_until(predicate: Any, what: str, timeout: float = 60.0) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = await predicate()
        if value:
            return value
        await asyncio.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


async def _tree(db: Database, root_id: str) -> list[tuple[str, str]]:
    """(id, status) of every run of the tree rooted at ``root_id``, the root included."""
    stmt = sa.select(instances.c.id, instances.c.status).where(
        sa.or_(instances.c.id == root_id, instances.c.root_instance_id == root_id)
    )
    async with db.read() as conn:
        return [(row[0], row[1]) for row in await conn.execute(stmt)]


async def _tree_runs(db: Database, root_id: str) -> int:
    async with db.read() as conn:
        return int((await conn.execute(sa.select(instances.c.tree_runs).where(instances.c.id == root_id))).scalar_one())


async def _failures(db: Database, error_type: str) -> list[str]:
    """The messages of the node failures of that type, in every run."""
    stmt = sa.select(instance_logs.c.error_message, instance_logs.c.payload).where(
        instance_logs.c.event_type == "NODE_FAILED"
    )
    async with db.read() as conn:
        rows = (await conn.execute(stmt)).all()
    return [message for message, payload in rows if payload["error"]["type"] == error_type]


def _bomb(self_id: str) -> dict[str, Any]:
    """The finding: a workflow that calls itself from a loop of 10 (concurrency 10), timeoutSeconds 3000."""
    return definition(
        [
            node("start", "start"),
            node("each", "loop", config={"items": list(range(10)), "concurrency": 10}),
            node("again", "workflow", config={"workflowId": self_id, "input": {}}, timeoutSeconds=3000),
            end(),
        ],
        [edge("start", "each"), edge("each", "again", "loop"), edge("each", "end", "done")],
        timeoutSeconds=3000,
    )


async def test_the_run_tree_bomb_stops_by_itself_at_the_cap(db: Database) -> None:
    engine = _engine(db, max_tree_runs=30)
    await engine.start()
    try:
        tenant_id = await engine.tenants.ensure("bomber")
        record = await engine.create_workflow(tenant_id, _trivial())
        assert await engine.save_workflow(tenant_id, record.id, 1, _bomb(record.id)) == 2
        root_id = await engine.start_workflow_run(tenant_id, record.id)

        async def all_ended() -> list[tuple[str, str]] | None:
            tree = await _tree(db, root_id)
            return tree if all(status not in ("RUNNING", "PENDING") for _, status in tree) else None

        tree = await _wait_until(all_ended, "every run of the tree to end")
        assert len(tree) == 30  # exactly the cap: the root and 29 runs it (and theirs) called
        assert await _tree_runs(db, root_id) == 30
        root = await engine.state.get_instance(root_id)
        assert root is not None and root.status is RunStatus.FAILED
        refused = await _failures(db, "TreeRunsExceeded")
        assert refused and all("FLOWDECK_MAX_TREE_RUNS" in message for message in refused)
        assert "at most 30 runs may be in one tree" in refused[0]
    finally:
        await engine.stop()


async def test_racing_calls_of_one_tree_are_counted_exactly(db: Database) -> None:
    """40 iterations call a child at once, from two engines (two workers, two connection pools); with a cap
    of 25 exactly 24 children start, and the other 16 calls fail on their error edge naming the setting."""
    first, second = _engine(db, max_tree_runs=25), _engine(db, max_tree_runs=25)
    await first.start()
    await second.start()
    try:
        tenant_id = await first.tenants.ensure("racer")
        child = definition(
            [node("start", "start"), node("work", config={"sleep": 0.3}), end()],
            [edge("start", "work"), edge("work", "end", "success")],
        )
        child_id = (await first.create_workflow(tenant_id, child)).id
        parent = definition(
            [
                node("start", "start"),
                node("each", "loop", config={"items": list(range(40)), "concurrency": 40}),
                node("call", "workflow", config={"workflowId": child_id, "input": {}}),
                node("refused"),
                end(),
            ],
            [
                edge("start", "each"),
                edge("each", "call", "loop"),
                edge("call", "refused", "error"),
                edge("each", "end", "done"),
            ],
        )
        parent_id = (await first.create_workflow(tenant_id, parent)).id
        root_id = await first.start_workflow_run(tenant_id, parent_id)
        finished = await first.wait_for_run(root_id, 60)

        assert finished.status is RunStatus.COMPLETED, finished.error
        tree = await _tree(db, root_id)
        assert len(tree) == 25 and await _tree_runs(db, root_id) == 25
        assert {status for run_id, status in tree if run_id != root_id} == {"COMPLETED"}
        refused = await _failures(db, "TreeRunsExceeded")
        assert len(refused) == 16 and all("FLOWDECK_MAX_TREE_RUNS" in message for message in refused)
    finally:
        await first.stop()
        await second.stop()


async def test_the_tree_counter_admits_exactly_the_cap_under_concurrent_transactions(db: Database) -> None:
    """The storage rule itself: 30 transactions count a run in one tree at once, each holding its
    transaction open a while after counting; with a cap of 10 exactly 9 are admitted."""
    engine = _engine(db)
    tenant_id = await engine.tenants.ensure("counter")
    workflow_id = (await engine.create_workflow(tenant_id, _trivial())).id
    root_id = await engine.start_workflow_run(tenant_id, workflow_id)  # no worker: it stays RUNNING

    async def count_one() -> str | None:
        async with db.transaction() as conn:
            counted = await count_tree_run(conn, root_id, 10)
            await asyncio.sleep(0.02)  # others try meanwhile
            return counted

    results = await asyncio.gather(*(count_one() for _ in range(30)))
    assert results.count(root_id) == 9 and results.count(None) == 21
    assert await _tree_runs(db, root_id) == 10
    await engine.stop()


async def _waiting_run(engine: Engine, tenant_id: str) -> str:
    """A run that stays active (RUNNING behind a 60-second delay) until cancelled."""
    waits = definition(
        [node("start", "start"), node("wait", "delay", config={"seconds": 60}), end()],
        [edge("start", "wait"), edge("wait", "end")],
    )
    workflow_id = (await engine.create_workflow(tenant_id, waits)).id
    return await engine.start_workflow_run(tenant_id, workflow_id)


async def test_a_scheduled_start_past_the_active_runs_cap_is_recorded_not_lost(db: Database) -> None:
    engine = _engine(db, tenant_active_runs=2)
    metrics = Metrics()
    engine.attach_observer(metrics)
    tenant_id = await engine.tenants.ensure("busy")
    active = [await _waiting_run(engine, tenant_id) for _ in range(2)]
    scheduled = definition(
        [node("start", "start"), end()], [edge("start", "end")], schedules=[{"cron": EVERY_5_MIN, "input": {"n": 1}}]
    )
    record = await engine.create_workflow(tenant_id, scheduled)
    due = Schedule(0, EVERY_5_MIN, "UTC", None).next_due(time.time())

    scheduler = Scheduler(engine)
    assert await scheduler.tick(due + 1) == []  # refused: not started
    assert await Scheduler(engine).tick(due + 2) == []  # another process: recorded once, not again
    run_id = fire_id(record.id, 0, due)
    refused = await engine.state.get_instance(run_id)
    assert refused is not None
    assert (refused.status, refused.trigger, refused.input) == (RunStatus.FAILED, "schedule", {"n": 1})
    assert refused.error is not None and "FLOWDECK_TENANT_ACTIVE_RUNS" in refused.error
    assert refused.error.startswith("not started: ")
    assert [n.event for n in await NoticeOutbox(db).pending(run_id)] == ["failure"]  # options.onFailure hears
    exposition = generate_latest(metrics.registry).decode()
    assert 'flowdeck_runs_refused_total{reason="tenant_active_runs",trigger="schedule"} 1.0' in exposition

    for run_id in active:  # room again: the next due time starts a run
        assert await engine.cancel_run(run_id)
    assert await scheduler.tick(due + 301) == [fire_id(record.id, 0, due + 300)]
    await engine.stop()


async def test_the_active_runs_cap_counts_pending_runs_and_child_starts(db: Database) -> None:
    engine = _engine(db, tenant_active_runs=2)
    tenant_id = await engine.tenants.ensure("full")
    other_tenant = await engine.tenants.ensure("neighbour")
    await _waiting_run(engine, tenant_id)
    trivial = _trivial()
    workflow_id = (await engine.create_workflow(tenant_id, trivial)).id
    await engine.start_workflow_run(tenant_id, workflow_id, timing=RunTiming(available_at=time.time() + 600))
    with pytest.raises(TooManyActiveRunsError, match="FLOWDECK_TENANT_ACTIVE_RUNS"):
        await engine.start_workflow_run(tenant_id, workflow_id)
    with pytest.raises(TooManyActiveRunsError):
        await engine.start_test_run(tenant_id, trivial)
    other_id = (await engine.create_workflow(other_tenant, trivial)).id
    assert await engine.start_workflow_run(other_tenant, other_id)  # another tenant is not held back
    await engine.stop()


async def test_a_child_start_past_the_active_runs_cap_fails_the_call_naming_the_setting(db: Database) -> None:
    engine = _engine(db, tenant_active_runs=2)
    await engine.start()
    try:
        tenant_id = await engine.tenants.ensure("callers")
        await _waiting_run(engine, tenant_id)
        child_id = (await engine.create_workflow(tenant_id, _trivial())).id
        caller = definition(
            [
                node("start", "start"),
                node("call", "workflow", config={"workflowId": child_id}, retry={"maxAttempts": 1}),
                end(),
            ],
            [edge("start", "call"), edge("call", "end", "success")],
        )
        caller_id = (await engine.create_workflow(tenant_id, caller)).id
        run_id = await engine.start_workflow_run(tenant_id, caller_id)  # the second active run: the child is a third
        finished = await engine.wait_for_run(run_id, 30)
        assert finished.status is RunStatus.FAILED
        refused = await _failures(db, "TooManyActiveRuns")
        assert len(refused) == 1 and "FLOWDECK_TENANT_ACTIVE_RUNS" in refused[0]
        assert len(await _tree(db, run_id)) == 1  # no child was created
    finally:
        await engine.stop()


def test_the_budgets_are_read_from_the_environment() -> None:
    settings = Settings.from_env({"FLOWDECK_MAX_TREE_RUNS": "30", "FLOWDECK_TENANT_ACTIVE_RUNS": "500"})
    assert (settings.max_tree_runs, settings.tenant_active_runs) == (30, 500)
    defaults = Settings.from_env({})
    assert (defaults.max_tree_runs, defaults.tenant_active_runs) == (1000, 10_000)
    with pytest.raises(ValueError, match="FLOWDECK_MAX_TREE_RUNS must be at least 1"):
        Settings.from_env({"FLOWDECK_MAX_TREE_RUNS": "0"})
    with pytest.raises(ValueError, match="FLOWDECK_TENANT_ACTIVE_RUNS must be an integer"):
        Settings.from_env({"FLOWDECK_TENANT_ACTIVE_RUNS": "lots"})


async def test_a_running_flowdeck_applies_the_budgets(tmp_path: Path) -> None:
    env = {
        "FLOWDECK_DATABASE_URL": f"sqlite+aiosqlite:///{tmp_path / 'flowdeck.db'}",
        "FLOWDECK_MAX_TREE_RUNS": "7",
        "FLOWDECK_TENANT_ACTIVE_RUNS": "3",
    }
    async with open_runtime(Settings.from_env(env), with_worker=False) as runtime:
        assert runtime.engine.limits == RunLimits(max_tree_runs=7, tenant_active_runs=3)
        assert runtime.engine.orchestrator.limits == runtime.engine.limits


async def test_the_gate_counts_a_tenant_far_below_the_budget_once_a_second() -> None:
    active = {"n": 0}
    counts: list[str] = []
    now = {"t": 100.0}

    async def count(tenant_id: str, up_to: int) -> int:
        counts.append(tenant_id)
        return min(active["n"], up_to)

    gate = ActiveRunsGate(count, 10, clock=lambda: now["t"])
    for _ in range(5):  # below half: the first start counts, the next four ride on it
        assert await gate.admit("a")
        active["n"] += 1
    assert counts == ["a"]
    assert await gate.admit("a") and len(counts) == 2  # at half: every start counts
    active["n"] += 1
    now["t"] += 1.5
    assert await gate.admit("b") and counts[-1] == "b"  # another tenant has a count of its own
    active["n"] = 10
    assert not await gate.admit("a")  # full: refused, and counted again next time
    active["n"] = 0
    assert await gate.admit("a") and counts.count("a") == 4


async def test_starts_that_arrive_during_a_count_share_it_and_never_pass_the_budget() -> None:
    counting = asyncio.Event()
    answer = asyncio.Event()
    counts: list[str] = []
    active = {"n": 7}  # of 10: three places left

    async def count(tenant_id: str, up_to: int) -> int:
        counts.append(tenant_id)
        counting.set()
        await answer.wait()
        return active["n"]

    gate = ActiveRunsGate(count, 10)
    starts = [asyncio.ensure_future(gate.admit("a")) for _ in range(5)]
    await counting.wait()  # the first start's count is under way; the other four arrived meanwhile
    answer.set()
    assert await asyncio.gather(*starts) == [True, True, True, False, False]
    assert counts == ["a"]
    active["n"] = 10  # the three started
    assert not await gate.admit("a") and counts == ["a", "a"]  # above half: the next start counts again
