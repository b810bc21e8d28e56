"""Priority all the way down (issue 23): a run's priority orders the claims of its node jobs, not only
which queued run starts; within a tenant's turn the higher priority goes first, lifted by age so an old
low-priority job still wins over fresh high ones (domain/flow_control.py ``aged_at``). Both databases,
through whichever claim statement the situation picks (one tenant, one or several priorities; tenants)."""

from __future__ import annotations

from flowdeck.domain.flow_control import aged_at
from flowdeck.engine.engine import Engine
from flowdeck.storage.database import Database
from flowdeck.storage.jobs import TenantShare
from tests.support.clock import FakeClock
from tests.support.graphs import definition, edge, end, linear, node
from tests.support.handlers import make_test_registry
from tests.support.runs import read_outcome
from tests.support.waiting import until

STEP = 1.0


def _fan_out(width: int) -> dict[str, object]:
    """start -> w1..wN (each a short sleep) -> end: one run, many ready jobs."""
    work = [node(f"w{i}", config={"sleep": 0.05}) for i in range(1, width + 1)]
    edges = [edge("start", w["id"]) for w in work] + [edge(w["id"], "end") for w in work]
    return definition([node("start", "start"), *work, end()], edges)


async def test_with_one_slot_a_later_high_priority_run_is_claimed_before_a_low_runs_backlog(db: Database) -> None:
    engine = Engine(db, make_test_registry(), concurrency=1, tenant_concurrency=1, poll_interval=0.05)
    tenant = await engine.tenants.ensure("acme")
    low_flow = await engine.create_workflow(tenant, _fan_out(8))
    high_flow = await engine.create_workflow(tenant, linear(3))
    await engine.start()
    try:
        low = await engine.start_workflow_run(tenant, low_flow.id, {}, priority=10)
        # Once the low run's start has fanned out, its eight jobs are ready and one of them runs.
        while (await read_outcome(engine, low)).count("NODE_STARTED") < 2:
            await engine.wait_for_run(low, 0.02)
        high = await engine.start_workflow_run(tenant, high_flow.id, {}, priority=90)
        done = [await engine.wait_for_run(run_id, 60) for run_id in (low, high)]
        assert [run.status.value for run in done] == ["COMPLETED", "COMPLETED"]

        low_rows = (await read_outcome(engine, low)).rows
        high_rows = (await read_outcome(engine, high)).rows
        high_started = [r.log_id for r in high_rows if r.event_type == "NODE_STARTED"]
        high_ready = min(r.log_id for r in high_rows if r.event_type == "NODE_DISPATCHED")
        low_started = [r for r in low_rows if r.event_type == "NODE_STARTED" and r.node_id != "end"]
        low_after = [r.log_id for r in low_started if r.log_id > high_ready]
        # Every node of the high run started before the low run's waiting fan-out went on; at most the one
        # low node already running when the high run was queued finished first.
        assert low_after, "the low run still had ready jobs when the high run started"
        assert max(high_started) < min(low_after)
    finally:
        await engine.stop()


async def test_an_old_low_priority_job_wins_over_fresh_high_ones_by_age(db: Database) -> None:
    """Claims by hand on a fake clock: the order is ``aged_at`` (due time lifted STEP seconds per point),
    the very rule the flow-control queue uses."""
    clock = FakeClock()
    engine = Engine(db, make_test_registry(), clock=clock, priority_step_seconds=STEP)  # no worker
    tenant = await engine.tenants.ensure("acme")
    flow = await engine.create_workflow(tenant, linear(1))
    share = TenantShare(priority_step=STEP)

    started: dict[str, tuple[float, int]] = {}

    async def queue(priority: int, after: float) -> str:
        clock.advance(after)
        run_id = await engine.start_workflow_run(tenant, flow.id, {}, priority=priority)
        started[run_id] = (clock.now, priority)
        return run_id

    old_low = await queue(40, 0)  # aged: t0 + 10
    high_soon = await queue(60, 5)  # aged: t0 + 5 - 10 = t0 - 5: first
    high_late = await queue(60, 20)  # aged: t0 + 25 - 10 = t0 + 15: after the old low one
    mid_late = await queue(50, 1)  # aged: t0 + 26: last
    clock.advance(1)

    claimed = []
    for _ in range(4):
        jobs = await engine.state.claim_jobs("w1", 1, 30, share)
        claimed += [job.instance_id for job in jobs]
    assert claimed == [high_soon, old_low, high_late, mid_late]
    # The same order as the rule worked out in Python (one rule: the SQL is built from the same function).
    assert claimed == sorted(started, key=lambda run_id: aged_at(*started[run_id], STEP))
    assert {job.priority for job in await engine.state.claim_jobs("w1", 1, 30, share)} == set()


async def test_priority_applies_within_each_tenants_turn(db: Database) -> None:
    """Two tenants: the fair claim still takes one job of each per round; within a tenant, the higher
    priority goes first; a tenant whose jobs share one priority keeps first-in, first-out."""
    clock = FakeClock()
    engine = Engine(db, make_test_registry(), clock=clock, priority_step_seconds=STEP)
    busy = await engine.tenants.ensure("busy")
    quiet = await engine.tenants.ensure("quiet")
    busy_flow = await engine.create_workflow(busy, linear(1))
    quiet_flow = await engine.create_workflow(quiet, linear(1))
    busy_low = [await engine.start_workflow_run(busy, busy_flow.id, {}, priority=20) for _ in range(3)]
    quiet_first = await engine.start_workflow_run(quiet, quiet_flow.id, {})
    clock.advance(1)
    busy_high = await engine.start_workflow_run(busy, busy_flow.id, {}, priority=80)
    quiet_second = await engine.start_workflow_run(quiet, quiet_flow.id, {})
    clock.advance(1)

    first = await engine.state.claim_jobs("w1", 2, 30, TenantShare(priority_step=STEP))
    assert {job.instance_id for job in first} == {busy_high, quiet_first}
    assert {job.priority for job in first} == {80, 50}
    second = await engine.state.claim_jobs("w1", 2, 30, TenantShare(priority_step=STEP))
    assert {job.instance_id for job in second} == {busy_low[0], quiet_second}


async def test_a_worker_that_never_saw_the_run_keeps_its_priority_for_the_nodes_it_queues(db: Database) -> None:
    """The process that starts a run and the one that runs it differ (serve and a worker): the worker learns
    the run's priority from the job it claimed, and the nodes it queues next carry it."""
    api = Engine(db, make_test_registry())  # starts runs, runs no node
    worker = Engine(db, make_test_registry(), poll_interval=0.05)
    tenant = await api.tenants.ensure("acme")
    flow = await api.create_workflow(
        tenant,
        definition(
            [node("start", "start"), node("a"), node("b", config={"sleep": 0.3}), node("c"), end()],
            [edge("start", "a"), edge("start", "b"), edge("a", "c"), edge("b", "c"), edge("c", "end")],
        ),
    )
    await api.start(with_worker=False)
    await worker.start()
    try:
        run = await api.start_workflow_run(tenant, flow.id, {}, priority=85)
        seen = await until(lambda: _queued_priorities(db, run), lambda found: "b" in found, what="b queued")
        done = await worker.wait_for_run(run, 30)
    finally:
        await worker.stop()
        await api.stop()
    assert done.status.value == "COMPLETED"
    assert set(seen.values()) == {85}  # a and b, queued by the worker's decision on start


async def _queued_priorities(db: Database, instance_id: str) -> dict[str, int]:
    import sqlalchemy as sa

    from flowdeck.storage.tables import node_jobs

    query = sa.select(node_jobs.c.node_id, node_jobs.c.priority).where(node_jobs.c.instance_id == instance_id)
    async with db.read(snapshot=False) as conn:
        return {row[0]: row[1] for row in (await conn.execute(query)).all()}
