"""Scheduled start (``availableAt``) and deadline (``deadlineAt``) of production runs (SPEC §2, §5),
on a fake clock: PENDING until due, durably (another engine on the same database picks it up), and
FAILED at the earlier of the deadline and the timeout, with an error that says which."""

from __future__ import annotations

import pytest

from flowdeck.engine.engine import Engine
from flowdeck.engine.run_timing import RunTiming, TimingError
from flowdeck.storage.database import Database
from tests.support.clock import FakeClock
from tests.support.graphs import linear
from tests.support.handlers import make_test_registry
from tests.support.runs import read_outcome


async def _start(engine: Engine, tenant_id: str, timing: RunTiming, **options: object) -> str:
    workflow = await engine.create_workflow(tenant_id, {**linear(1), "options": options} if options else linear(1))
    return await engine.start_workflow_run(tenant_id, workflow.id, {"n": 1}, timing=timing)


async def test_a_scheduled_run_stays_pending_until_due_even_across_a_restart(db: Database) -> None:
    clock = FakeClock()
    first = Engine(db, make_test_registry(), clock=clock)  # no worker: it goes away before the run is due
    tenant_id = await first.tenants.ensure("acme")
    due = clock.now + 60
    instance_id = await _start(first, tenant_id, RunTiming(available_at=due))
    pending = await read_outcome(first, instance_id)
    assert pending.run.status == "PENDING" and pending.run.started_at == due  # the list shows when it starts
    assert pending.status_of("start") == "DISPATCHED" and pending.nodes["start"].next_attempt_at == due
    assert [r.payload for r in pending.rows if r.event_type == "RUN_STATUS"] == [
        {"status": "PENDING", "availableAt": due}
    ]

    second = Engine(db, make_test_registry(), clock=clock, poll_interval=0.02)  # "after a restart"
    assert await second.state.claim_jobs("early", 10, 30) == []  # not due: nothing to claim
    clock.advance(61)
    await second.start()
    try:
        run = await second.wait_for_run(instance_id, 10)
    finally:
        await second.stop()
    assert run.status == "COMPLETED" and run.started_at == clock.now
    outcome = await read_outcome(second, instance_id)
    statuses = [(r.payload["status"], r.payload.get("reason")) for r in outcome.rows if r.event_type == "RUN_STATUS"]
    assert statuses == [("PENDING", None), ("RUNNING", "scheduled start (availableAt)"), ("COMPLETED", None)]


async def test_a_deadline_before_the_timeout_fails_the_run_saying_so(db: Database) -> None:
    clock = FakeClock()
    engine = Engine(db, make_test_registry(), clock=clock)  # no worker: the start node stays queued
    tenant_id = await engine.tenants.ensure("acme")
    deadline = clock.now + 10
    instance_id = await _start(engine, tenant_id, RunTiming(deadline_at=deadline), timeoutSeconds=3600)
    clock.advance(9)
    await engine.worker.sweep()
    assert (await engine.state.get_instance(instance_id)).status == "RUNNING"  # type: ignore[union-attr]
    clock.advance(2)
    await engine.worker.sweep()
    outcome = await read_outcome(engine, instance_id)
    assert outcome.run.status == "FAILED"
    assert outcome.run.error == f"run failed: it passed its deadline (deadlineAt {deadline:g})"
    assert outcome.status_of("start") == "CANCELLED"


async def test_the_timeout_wins_when_it_comes_first(db: Database) -> None:
    clock = FakeClock()
    engine = Engine(db, make_test_registry(), clock=clock)
    tenant_id = await engine.tenants.ensure("acme")
    instance_id = await _start(engine, tenant_id, RunTiming(deadline_at=clock.now + 100), timeoutSeconds=30)
    clock.advance(31)
    await engine.worker.sweep()
    run = await engine.state.get_instance(instance_id)
    assert run is not None and run.status == "FAILED"
    assert run.error == "run timed out: it passed its timeout of 30 s (options.timeoutSeconds)"


async def test_a_pending_run_whose_deadline_passes_fails_without_starting(db: Database) -> None:
    clock = FakeClock()
    engine = Engine(db, make_test_registry(), clock=clock)  # no worker at all until after the deadline
    tenant_id = await engine.tenants.ensure("acme")
    timing = RunTiming(available_at=clock.now + 60, deadline_at=clock.now + 90)
    instance_id = await _start(engine, tenant_id, timing)
    clock.advance(91)
    await engine.worker.sweep()
    outcome = await read_outcome(engine, instance_id)
    assert outcome.run.status == "FAILED" and "deadlineAt" in (outcome.run.error or "")
    assert outcome.status_of("start") == "CANCELLED"
    assert outcome.count("NODE_STARTED") == 0
    assert await engine.state.count_jobs(instance_id) == 0


@pytest.mark.parametrize(
    ("timing", "field", "words"),
    [
        (RunTiming(deadline_at=999.0), "deadlineAt", "already passed"),
        (RunTiming(available_at=2000.0, deadline_at=1500.0), "deadlineAt", "not after availableAt"),
        (RunTiming(available_at=float("nan")), "availableAt", "epoch seconds"),
    ],
)
def test_impossible_timings_name_their_field(timing: RunTiming, field: str, words: str) -> None:
    with pytest.raises(TimingError) as refused:
        timing.check(now=1000.0)
    assert refused.value.field == field and words in str(refused.value)
