"""Retention (issue 22): finished runs past their tenant's age or count limits are deleted with every row
they own; unfinished runs, finished children of unfinished callers, runs with a notice still to send and
the latest COMPLETED run feeding a widget never are. On SQLite and PostgreSQL."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from typing import Any

import pytest
import sqlalchemy as sa

from flowdeck.domain.retention import DAY_SECONDS, RetentionPolicy
from flowdeck.domain.statuses import RunStatus
from flowdeck.engine.engine import Engine
from flowdeck.engine.run_timing import RunTiming
from flowdeck.storage.database import Database
from flowdeck.storage.notices import FAILURE, add_notice
from flowdeck.storage.schema import RUN_OWNED_TABLES
from flowdeck.storage.tables import instances, node_jobs
from flowdeck.storage.widgets import WidgetFields, WidgetStore
from tests.support.clock import FakeClock
from tests.support.graphs import definition, edge, end, linear, node
from tests.support.handlers import make_test_registry

FOREVER = float("inf")


class TickingClock(FakeClock):
    """Real time, plus whatever the test moved it on by (runs made one after another differ in age)."""

    def __init__(self) -> None:
        super().__init__(0.0)
        self._base = time.time() - time.perf_counter()

    def __call__(self) -> float:
        return self._base + time.perf_counter() + self.now


@pytest.fixture
def clock() -> FakeClock:
    return TickingClock()


@pytest.fixture
async def engine(db: Database, clock: FakeClock) -> AsyncIterator[Engine]:
    eng = Engine(db, make_test_registry(), lease_seconds=2.0, poll_interval=0.05, clock=clock)
    eng.pruner.interval = FOREVER  # the test prunes by hand; no background pass beside it
    await eng.start()
    yield eng
    await eng.stop()


async def finished_run(engine: Engine, tenant_id: str, workflow_id: str) -> str:
    run_id = await engine.start_workflow_run(tenant_id, workflow_id, {}, labels={"customer": "acme"})
    run = await engine.wait_for_run(run_id, 20)
    assert run.status is RunStatus.COMPLETED, run.error
    return run_id


async def finished_test_run(engine: Engine, tenant_id: str, graph: dict[str, Any]) -> str:
    run_id = await engine.start_test_run(tenant_id, graph, {})
    run = await engine.wait_for_run(run_id, 20)
    assert run.status is RunStatus.COMPLETED, run.error
    return run_id


async def existing(db: Database, run_ids: list[str]) -> set[str]:
    async with db.read() as conn:
        rows = await conn.execute(sa.select(instances.c.id).where(instances.c.id.in_(run_ids)))
        return {row[0] for row in rows}


async def log_rows(db: Database, run_ids: list[str]) -> int:
    """The rows of every table a run owns (its log, labels, jobs, notices …)."""
    total = 0
    async with db.read() as conn:
        for table in RUN_OWNED_TABLES:
            stmt = sa.select(sa.func.count()).select_from(table).where(table.c.instance_id.in_(run_ids))
            total += int((await conn.execute(stmt)).scalar_one())
    return total


def caller(child_id: str, *, then_sleep: float = 0) -> dict[str, Any]:
    """start -> call (the child workflow) -> after (a step sleeping ``then_sleep`` s) -> end."""
    return definition(
        [
            node("start", "start"),
            node("call", "workflow", config={"workflowId": child_id, "input": {}}),
            node("after", config={"sleep": then_sleep}),
            end(),
        ],
        [edge("start", "call"), edge("call", "after", "success"), edge("after", "end", "success")],
    )


async def test_finished_runs_are_deleted_by_age_test_runs_sooner(
    engine: Engine, db: Database, clock: FakeClock
) -> None:
    tenant_id = await engine.tenants.ensure("acme")
    workflow = await engine.create_workflow(tenant_id, linear(2))
    production = await finished_run(engine, tenant_id, workflow.id)
    test_run = await finished_test_run(engine, tenant_id, linear(2))
    later = RunTiming(available_at=clock() + 400 * DAY_SECONDS)  # scheduled: PENDING for 400 days
    scheduled = await engine.start_workflow_run(tenant_id, workflow.id, {}, timing=later)
    assert await log_rows(db, [production, test_run]) > 0

    clock.advance(8 * DAY_SECONDS)  # past the test runs' 7 days, within the production runs' 30
    [pruned] = await engine.pruner.prune()
    assert (pruned.tenant, pruned.production, pruned.test) == ("acme", 0, 1)
    assert await existing(db, [production, test_run, scheduled]) == {production, scheduled}
    assert await log_rows(db, [test_run]) == 0

    clock.advance(23 * DAY_SECONDS)  # 31 days
    [pruned] = await engine.pruner.prune()
    assert (pruned.production, pruned.test) == (1, 0)
    assert await existing(db, [production, scheduled]) == {scheduled}  # never a run that has not finished
    assert await log_rows(db, [production]) == 0
    assert await engine.pruner.prune() == []  # nothing left to do


async def test_a_tenant_keeps_its_newest_runs_by_count_and_its_own_policy(engine: Engine, db: Database) -> None:
    tenant_id = await engine.tenants.ensure("acme")
    other_id = await engine.tenants.ensure("other")
    workflow = await engine.create_workflow(tenant_id, linear(1))
    theirs = await engine.create_workflow(other_id, linear(1))
    runs = [await finished_run(engine, tenant_id, workflow.id) for _ in range(5)]
    other_runs = [await finished_run(engine, other_id, theirs.id) for _ in range(3)]
    await engine.pruner.store.put(tenant_id, RetentionPolicy(max_age_days=0, test_max_age_days=0, max_runs=2), 0)

    [pruned] = await engine.pruner.prune()

    assert (pruned.tenant, pruned.production) == ("acme", 3)
    assert await existing(db, runs) == set(runs[-2:])  # the two newest
    assert await existing(db, other_runs) == set(other_runs)  # the server's defaults: 100,000 runs, 30 days
    assert await engine.pruner.policy(tenant_id) == (RetentionPolicy(0, 0, 2), True)
    assert await engine.pruner.policy(other_id) == (RetentionPolicy(), False)


async def test_what_is_never_deleted(engine: Engine, db: Database, clock: FakeClock) -> None:
    tenant_id = await engine.tenants.ensure("acme")
    child = await engine.create_workflow(tenant_id, linear(1))
    fed = await engine.create_workflow(tenant_id, linear(1))
    await WidgetStore(db).create(tenant_id, WidgetFields(fed.id, "w", "json", "replay", {}, None), clock())
    older_feed = await finished_run(engine, tenant_id, fed.id)
    feeding = await finished_run(engine, tenant_id, fed.id)  # the latest COMPLETED run: the widget shows it
    noticed = await finished_run(engine, tenant_id, child.id)
    async with db.transaction() as conn:
        await add_notice(conn, noticed, FAILURE, clock())  # a notice still to send (no notifier runs here)
    parent_flow = await engine.create_workflow(tenant_id, caller(child.id, then_sleep=60))
    parent = await engine.start_workflow_run(tenant_id, parent_flow.id, {})
    called = await _finished_call(engine, parent)  # the child finished; its caller still runs
    later = RunTiming(available_at=clock() + 400 * DAY_SECONDS)
    scheduled = await engine.start_workflow_run(tenant_id, child.id, {}, timing=later)
    newest = await finished_run(engine, tenant_id, child.id)
    await engine.pruner.store.put(tenant_id, RetentionPolicy(max_age_days=0, test_max_age_days=0, max_runs=1), 0)

    [pruned] = await engine.pruner.prune()

    assert pruned.production == 1
    kept = {feeding, noticed, parent, called, scheduled, newest}
    assert await existing(db, [older_feed, *kept]) == kept

    await engine.cancel_run(parent)
    await engine.wait_for_run(parent, 20)
    [pruned] = await engine.pruner.prune()
    assert pruned.production == 2  # the caller and, with it, its child
    assert await existing(db, [parent, called]) == set()
    async with db.read() as conn:
        left = await conn.execute(sa.select(sa.func.count()).where(node_jobs.c.instance_id.in_([parent, called])))
        assert left.scalar_one() == 0


async def _finished_call(engine: Engine, parent_id: str) -> str:
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        call = await engine.children.latest_call(parent_id, "call", "")
        if call is not None and call.status is RunStatus.COMPLETED:
            return call.instance_id
        await asyncio.sleep(0.02)
    raise AssertionError("the child run did not finish")


async def test_child_test_runs_are_deleted_with_their_caller(engine: Engine, db: Database) -> None:
    tenant_id = await engine.tenants.ensure("acme")
    child = await engine.create_workflow(tenant_id, linear(1))
    parent = await finished_test_run(engine, tenant_id, caller(child.id))
    call = await engine.children.latest_call(parent, "call", "")
    assert call is not None
    newest = await finished_test_run(engine, tenant_id, linear(1))
    # Two runs kept: the child (newer than its caller) and the newest; the caller is past the count.
    await engine.pruner.store.put(tenant_id, RetentionPolicy(max_age_days=0, test_max_age_days=0, max_runs=2), 0)

    assert [(p.production, p.test) for p in await engine.pruner.prune(dry_run=True)] == [(0, 2)]
    assert await existing(db, [parent, call.instance_id, newest]) == {parent, call.instance_id, newest}

    [pruned] = await engine.pruner.prune()

    assert (pruned.production, pruned.test) == (0, 2)
    assert await existing(db, [parent, call.instance_id, newest]) == {newest}
    assert await log_rows(db, [parent, call.instance_id]) == 0


async def test_a_pass_on_postgresql_without_autovacuum_says_so_once(
    engine: Engine, db: Database, caplog: pytest.LogCaptureFixture
) -> None:
    tenant_id = await engine.tenants.ensure("acme")
    workflow = await engine.create_workflow(tenant_id, linear(1))
    await engine.pruner.store.put(tenant_id, RetentionPolicy(max_age_days=0, test_max_age_days=0, max_runs=1), 0)
    if db.is_sqlite:
        off = False
    else:
        async with db.read() as conn:
            off = (await conn.execute(sa.text("SHOW autovacuum"))).scalar() != "on"

    for _ in range(2):
        await finished_run(engine, tenant_id, workflow.id)
        await finished_run(engine, tenant_id, workflow.id)
        [pruned] = await engine.pruner.prune()
        assert pruned.production >= 1

    warnings = [r for r in caplog.records if "autovacuum is off" in r.getMessage()]
    assert len(warnings) == (1 if off else 0)
