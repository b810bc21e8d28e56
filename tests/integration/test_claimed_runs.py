"""A run taken by a process that did not start it (serve starts, a worker process runs): the claim tells the
worker the run's version, so the node's result goes by the same one-statement step as in the process that
started the run, not by the general decision's version swap, completion, dispatch and charge. Measured in
the round trips each process's database counts (``flowdeck_db_round_trips`` on ``/metrics``)."""

from __future__ import annotations

from flowdeck.engine.engine import Engine
from flowdeck.engine.run_timing import RunTiming
from flowdeck.storage.database import Database
from flowdeck.storage.records import Job
from tests.support.clock import FakeClock
from tests.support.graphs import linear
from tests.support.handlers import make_test_registry

OWNER = "claimer"
LEASE = 60.0


async def _round_trips_of_result(engine: Engine, job: Job) -> tuple[int, Job | None]:
    """The round trips ``engine`` takes to run ``job`` and decide its result, and the job it goes on with."""
    outcome, _ = await engine.executor.run(job)
    before = engine.state.db.counter.round_trips
    follow = await engine.orchestrator.handle_result(job, outcome, claim_for=OWNER)
    return engine.state.db.counter.round_trips - before, follow


async def test_a_run_started_elsewhere_takes_its_first_step_as_cheaply_as_where_it_started(
    db: Database, database_url: str
) -> None:
    starter = Engine(db, make_test_registry(), lease_seconds=LEASE)  # no worker loop: claims by hand
    other_db = Database(database_url)
    other = Engine(other_db, make_test_registry(), lease_seconds=LEASE)
    try:
        tenant = await starter.tenants.ensure("acme")
        flow = await starter.create_workflow(tenant, linear(1))

        here = await starter.start_workflow_run(tenant, flow.id, {})
        [own_start] = await starter.state.claim_jobs(OWNER, 10, LEASE)
        own_cost, own_next = await _round_trips_of_result(starter, own_start)

        elsewhere = await starter.start_workflow_run(tenant, flow.id, {})
        [claimed] = await other.state.claim_jobs(OWNER, 10, LEASE)
        assert claimed.instance_id == elsewhere
        claimed_cost, claimed_next = await _round_trips_of_result(other, claimed)

        assert own_next is not None and own_next.node_id == "s1"
        assert claimed_next is not None and claimed_next.node_id == "s1"  # leased on: no claim in between
        assert claimed_cost == own_cost, (claimed_cost, own_cost)

        for engine, job in ((starter, own_next), (other, claimed_next)):
            while job is not None:
                _, job = await _round_trips_of_result(engine, job)
        for run_id in (here, elsewhere):
            run = await starter.state.get_instance(run_id)
            assert run is not None and run.status.value == "COMPLETED"
    finally:
        await other.stop()
        await starter.stop()
        await other_db.dispose()


async def test_a_claim_tells_no_version_of_a_run_that_has_not_begun(db: Database) -> None:
    """A scheduled run is PENDING until its start node runs; its first decision begins it (the general
    decision's): the claim gives no version to step from."""
    clock = FakeClock()
    engine = Engine(db, make_test_registry(), lease_seconds=LEASE, clock=clock)
    try:
        tenant = await engine.tenants.ensure("acme")
        flow = await engine.create_workflow(tenant, linear(1))
        running = await engine.start_workflow_run(tenant, flow.id, {})
        scheduled = await engine.start_workflow_run(tenant, flow.id, {}, timing=RunTiming(available_at=clock.now + 30))
        clock.advance(31)
        claimed = {job.instance_id: job for job in await engine.state.claim_jobs(OWNER, 10, LEASE)}
        record = await engine.state.get_instance(running)
        assert record is not None and claimed[running].run_version == record.version
        assert claimed[scheduled].run_version is None
        outcome, _ = await engine.executor.run(claimed[scheduled])
        await engine.orchestrator.handle_result(claimed[scheduled], outcome, claim_for=OWNER)
        run = await engine.state.get_instance(scheduled)
        assert run is not None and run.status.value == "RUNNING"
    finally:
        await engine.stop()
