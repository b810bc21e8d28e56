"""Fair share between tenants: claims take tenants in turn, and one tenant holds at most its cap of a
worker's slots, so a burst of one tenant never starves another (issue 11 point 7)."""

from __future__ import annotations

import asyncio

from flowdeck.engine.engine import Engine
from flowdeck.storage.database import Database
from flowdeck.storage.jobs import TenantShare
from flowdeck.storage.records import Job
from tests.support.clock import FakeClock
from tests.support.graphs import definition, edge, end, linear, node
from tests.support.handlers import make_test_registry
from tests.support.runs import read_outcome, start


async def _queue(engine: Engine, clock: FakeClock, tenant_id: str, workflow_id: str, runs: int) -> list[str]:
    """Start ``runs`` runs one clock tick apart (their start jobs queue in that order)."""
    ids = []
    for _ in range(runs):
        clock.advance(1)
        ids.append(await engine.start_workflow_run(tenant_id, workflow_id, {}))
    return ids


async def test_a_claim_takes_tenants_in_turn_and_none_past_its_cap(db: Database) -> None:
    clock = FakeClock()
    engine = Engine(db, make_test_registry(), clock=clock)  # no worker: the test claims by hand
    busy = await engine.tenants.ensure("busy")
    quiet = await engine.tenants.ensure("quiet")
    busy_flow = await engine.create_workflow(busy, linear(1))
    quiet_flow = await engine.create_workflow(quiet, linear(1))
    busy_runs = await _queue(engine, clock, busy, busy_flow.id, 5)  # the older jobs
    quiet_runs = await _queue(engine, clock, quiet, quiet_flow.id, 2)
    clock.advance(1)

    def runs_of(jobs: list[Job]) -> list[str]:
        return sorted(job.instance_id for job in jobs)

    # Round-robin: the oldest of each tenant, then the next of each; not the five oldest of "busy".
    first = await engine.state.claim_jobs("w1", 3, 30)
    assert runs_of(first) == sorted([busy_runs[0], quiet_runs[0], busy_runs[1]])
    assert {job.tenant_id for job in first} == {busy, quiet}
    # A cap of 1 and one "busy" node already held: only "quiet" may take a slot.
    share = TenantShare(cap=1, running={first[0].id: busy})
    second = await engine.state.claim_jobs("w2", 3, 30, share)
    assert runs_of(second) == [quiet_runs[1]]
    # The rest of "busy" waits for slots; a cap of 2 with nothing held takes two of them.
    third = await engine.state.claim_jobs("w3", 5, 30, TenantShare(cap=2))
    assert runs_of(third) == sorted(busy_runs[2:4])


async def test_a_second_tenants_run_is_claimed_before_the_first_tenants_backlog_drains(db: Database) -> None:
    """Concurrency 2, a cap of 1: the busy tenant holds one slot, so the quiet tenant's run gets the
    other at once instead of queueing behind the backlog (first in, first out would start the busy
    tenant's second run first)."""
    engine = Engine(db, make_test_registry(), concurrency=2, tenant_concurrency=1, poll_interval=0.05)
    await engine.start()
    try:
        busy = await engine.tenants.ensure("busy")
        quiet = await engine.tenants.ensure("quiet")
        slow = definition(
            [node("start", "start"), node("work", config={"sleep": 0.5}), end()],
            [edge("start", "work"), edge("work", "end")],
        )
        busy_flow = await engine.create_workflow(busy, slow)
        busy_runs = [await engine.start_workflow_run(busy, busy_flow.id, {}) for _ in range(3)]
        quiet_run = await start(engine, quiet, linear(1))
        runs = await asyncio.gather(*(engine.wait_for_run(i, 30) for i in [*busy_runs, quiet_run]))
        assert [r.status.value for r in runs] == ["COMPLETED"] * 4

        async def first_start(instance_id: str) -> int:
            rows = (await read_outcome(engine, instance_id)).rows
            return min(r.log_id for r in rows if r.event_type == "NODE_STARTED")

        quiet_started = await first_start(quiet_run)
        busy_started = [await first_start(i) for i in busy_runs]
        assert busy_started[0] < quiet_started < busy_started[1] < busy_started[2]
    finally:
        await engine.stop()


async def test_the_default_cap_is_half_the_workers_slots_and_at_least_one(db: Database) -> None:
    registry = make_test_registry()
    assert Engine(db, registry, concurrency=16).worker.tenant_concurrency == 8
    assert Engine(db, registry, concurrency=1).worker.tenant_concurrency == 1
    assert Engine(db, registry, concurrency=16, tenant_concurrency=3).worker.tenant_concurrency == 3
