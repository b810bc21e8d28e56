"""SLA breaches (SPEC §2 options.slaSeconds): marked once, announced, notified; the run goes on."""

from __future__ import annotations

import asyncio

from flowdeck.domain.statuses import RunStatus
from flowdeck.engine.engine import Engine
from flowdeck.engine.publisher import RunUpdate
from flowdeck.storage.database import Database
from flowdeck.storage.notices import NoticeOutbox
from tests.support.clock import FakeClock
from tests.support.graphs import definition, edge, end, node
from tests.support.handlers import make_test_registry
from tests.support.runs import read_outcome, run_to_end, start


def _chain(**options: object) -> dict:
    return definition(
        [node("start", "start"), node("long"), end()],
        [edge("start", "long"), edge("long", "end")],
        **options,
    )


async def test_a_run_past_its_sla_is_marked_once_and_goes_on(db: Database) -> None:
    clock = FakeClock()
    engine = Engine(db, make_test_registry(), clock=clock)  # no worker runs: the run stays RUNNING
    tenant_id = await engine.tenants.ensure("acme")
    instance_id = await start(engine, tenant_id, _chain(slaSeconds=10))
    started = (await engine.state.get_instance(instance_id)).started_at  # type: ignore[union-attr]
    with engine.publisher.subscribe(instance_id, runs_only=True) as updates:
        clock.advance(9.5)
        await engine.worker.sweep()
        assert (await engine.state.get_instance(instance_id)).sla_breached_at is None  # type: ignore[union-attr]
        clock.advance(1)
        await engine.worker.sweep()
        announced = await asyncio.wait_for(updates.get(), 1)
        clock.advance(5)
        await engine.worker.sweep()  # a later sweep marks nothing again
    assert isinstance(announced, RunUpdate)
    assert announced.sla_seconds == 10 and announced.at == started + 10.5  # type: ignore[operator]
    run = await engine.state.get_instance(instance_id)
    assert run is not None and run.status is RunStatus.RUNNING and run.sla_breached_at == started + 10.5  # type: ignore[operator]
    outcome = await read_outcome(engine, instance_id)
    breaches = [r for r in outcome.rows if r.event_type == "RUN_SLA_BREACHED"]
    assert len(breaches) == 1 and breaches[0].node_id is None
    assert breaches[0].payload == {"slaSeconds": 10, "at": started + 10.5}  # type: ignore[operator]
    assert [(n.instance_id, n.event) for n in await NoticeOutbox(db).pending()] == [(instance_id, "sla_breach")]


async def test_two_engines_sweeping_the_same_database_mark_a_breach_once(db: Database, database_url: str) -> None:
    clock = FakeClock()
    first = Engine(db, make_test_registry(), clock=clock)
    other_db = db if db.is_sqlite else Database(database_url)  # another process: its own pool
    second = Engine(other_db, make_test_registry(), clock=clock)
    tenant_id = await first.tenants.ensure("acme")
    runs = [await start(first, tenant_id, _chain(slaSeconds=5)) for _ in range(5)]
    clock.advance(6)
    try:
        marked = await asyncio.gather(*(e.worker.sweep() for e in (first, second, first, second)))
    finally:
        if other_db is not db:
            await other_db.dispose()
    assert marked == [None] * 4
    for instance_id in runs:
        rows = await first.state.read_log(instance_id)
        assert len([r for r in rows if r.event_type == "RUN_SLA_BREACHED"]) == 1
    notices = await NoticeOutbox(db).pending()
    assert sorted(n.instance_id for n in notices) == sorted(runs)
    assert {n.event for n in notices} == {"sla_breach"}


async def test_a_run_without_sla_or_finished_in_time_is_never_marked(engine: Engine, tenant_id: str) -> None:
    outcome = await run_to_end(engine, tenant_id, _chain(slaSeconds=30))
    assert outcome.run.status == "COMPLETED"
    engine.worker.clock = lambda: outcome.run.started_at + 60  # type: ignore[operator]
    await engine.worker.sweep()
    after = await read_outcome(engine, outcome.run.id)
    assert after.run.sla_breached_at is None
    assert not [r for r in after.rows if r.event_type == "RUN_SLA_BREACHED"]
    assert await NoticeOutbox(engine.db).pending() == []


async def test_a_failed_production_run_queues_one_failure_notice_and_a_test_run_none(
    engine: Engine, tenant_id: str
) -> None:
    failing = definition(
        [node("start", "start"), node("bad", config={"failTimes": 9, "retryable": False}), end()],
        [edge("start", "bad"), edge("bad", "end")],
    )
    outcome = await run_to_end(engine, tenant_id, failing)
    assert outcome.run.status == "FAILED"
    test_run = await engine.start_test_run(tenant_id, failing)
    assert (await engine.wait_for_run(test_run, 10)).status == "FAILED"
    notices = await NoticeOutbox(engine.db).pending()
    assert [(n.instance_id, n.event) for n in notices] == [(outcome.run.id, "failure")]


async def test_a_breach_marked_by_one_process_reaches_another_processs_clients(postgres_url: str) -> None:
    """Over LISTEN/NOTIFY (the default transport): what ``flowdeck serve``'s relay would send as workflow_sla_breach."""
    import uuid

    from flowdeck.engine.fanout import Fanout
    from flowdeck.engine.pg_notify import PostgresTransport
    from flowdeck.engine.publisher import LocalPublisher

    db = Database(postgres_url)
    clock = FakeClock()
    worker = Engine(db, make_test_registry(), clock=clock)  # "flowdeck worker", swept by hand
    serve_publisher = LocalPublisher()  # "flowdeck serve"
    channel = f"flowdeck_test_{uuid.uuid4().hex[:12]}"
    fanouts = [
        Fanout(PostgresTransport(postgres_url, channel=channel), worker.publisher),
        Fanout(PostgresTransport(postgres_url, channel=channel), serve_publisher),
    ]
    for fanout in fanouts:
        await fanout.start()
    try:
        tenant_id = await worker.tenants.ensure("acme")
        instance_id = await start(worker, tenant_id, _chain(slaSeconds=2))
        with serve_publisher.subscribe(instance_id, runs_only=True) as watched:
            await serve_publisher.watches.watch(instance_id)  # a page in serve shows the run
            clock.advance(3)
            await worker.worker.sweep()
            update = await asyncio.wait_for(watched.get(), 10)
            while isinstance(update, RunUpdate) and update.sla_seconds is None:  # the run's start, relayed late
                update = await asyncio.wait_for(watched.get(), 10)
    finally:
        for fanout in fanouts:
            await fanout.stop()
        await db.dispose()
    assert isinstance(update, RunUpdate)
    assert (update.instance_id, update.status, update.sla_seconds) == (instance_id, RunStatus.RUNNING, 2)
