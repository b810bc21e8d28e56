"""Schedules (SPEC §8): validation, and the scheduler's exactly-once fires with an injected clock."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest
import sqlalchemy as sa

from flowdeck.domain.schedules import Schedule, parse_schedules
from flowdeck.engine.engine import DefinitionInvalidError, Engine
from flowdeck.storage.database import Database
from flowdeck.storage.flow import run_priority
from flowdeck.storage.tables import instances, node_jobs
from flowdeck.triggers.schedules import Scheduler, fire_id
from tests.support.graphs import definition, edge, end, node
from tests.support.handlers import make_test_registry

EVERY_5_MIN = "*/5 * * * *"


def scheduled(*schedules: dict[str, Any]) -> dict[str, Any]:
    return definition(
        [node("start", "start"), end(params={"got": "{{ ctx.input }}"})],
        [edge("start", "end")],
        schedules=list(schedules),
    )


async def schedule_runs(engine: Engine, workflow_id: str) -> list[tuple[str, Any]]:
    stmt = sa.select(instances.c.id, instances.c.input).where(
        instances.c.workflow_id == workflow_id, instances.c.trigger == "schedule"
    )
    async with engine.db.read() as conn:
        return [(row[0], row[1]) for row in await conn.execute(stmt)]


def next_due(cron: str, after: float) -> float:
    return Schedule(0, cron, "UTC", None).next_due(after)


def test_schedule_validation_names_every_problem(engine: Engine) -> None:
    bad = scheduled(
        {"cron": "* * *"},
        {"cron": "61 * * * *", "timezone": "Mars/Olympus", "extra": 1},
        {"timezone": "UTC"},
        {"cron": "0 9 * * 1-5", "timezone": "Europe/Paris", "input": {"x": [1]}},
    )
    problems = {(p.code, p.path) for p in engine.validate(bad)}
    assert problems == {
        ("invalid_schedule", "options.schedules[0].cron"),
        ("invalid_schedule", "options.schedules[1].cron"),
        ("invalid_schedule", "options.schedules[1].timezone"),
        ("invalid_schedule", "options.schedules[1].extra"),
        ("invalid_schedule", "options.schedules[2].cron"),
    }
    too_many = engine.validate(scheduled(*[{"cron": "* * * * *"}] * 21))
    assert [p.path for p in too_many] == ["options.schedules"]
    assert engine.validate(scheduled({"cron": "*/5 * * * *"}, {"cron": "0 9 * * 1-5", "timezone": "Asia/Tokyo"})) == []
    assert [p.path for p in engine.validate(scheduled())] == []
    not_objects = engine.validate(definition([node("start", "start"), end()], [edge("start", "end")], schedules=[1]))
    assert [p.path for p in not_objects] == ["options.schedules"]
    assert [(s.cron, s.timezone, s.input) for s in parse_schedules(scheduled({"cron": "1 * * * *"}))] == [
        ("1 * * * *", "UTC", None)
    ]


def test_due_times_follow_the_time_zone() -> None:
    paris = Schedule(0, "0 9 * * *", "Europe/Paris", None)
    summer, winter = 1_751_400_000.0, 1_736_000_000.0  # 2025-07-01, 2025-01-04
    assert time.gmtime(paris.next_due(summer)).tm_hour == 7
    assert time.gmtime(paris.next_due(winter)).tm_hour == 8
    assert paris.previous_due(paris.next_due(summer)) == paris.next_due(summer)


async def test_invalid_schedules_are_refused_on_save(engine: Engine, tenant_id: str) -> None:
    with pytest.raises(DefinitionInvalidError) as refused:
        await engine.create_workflow(tenant_id, scheduled({"cron": "every day"}))
    assert [p.path for p in refused.value.problems] == ["options.schedules[0].cron"]


async def test_two_schedulers_fire_each_due_time_exactly_once(engine: Engine, tenant_id: str) -> None:
    record = await engine.create_workflow(tenant_id, scheduled({"cron": EVERY_5_MIN, "input": {"n": 1}}))
    due = next_due(EVERY_5_MIN, time.time())
    first, second = Scheduler(engine), Scheduler(engine)
    started = await asyncio.gather(first.tick(due + 1), second.tick(due + 1), first.tick(due + 2))
    assert sum(len(ids) for ids in started) == 1
    assert await schedule_runs(engine, record.id) == [(fire_id(record.id, 0, due), {"n": 1})]
    assert await second.tick(due + 200) == [] and await first.tick(due + 299) == []

    later = await asyncio.gather(second.tick(due + 301), first.tick(due + 302))
    assert sum(len(ids) for ids in later) == 1
    runs = await schedule_runs(engine, record.id)
    assert sorted(r[0] for r in runs) == sorted([fire_id(record.id, 0, due), fire_id(record.id, 0, due + 300)])
    finished = await engine.wait_for_run(fire_id(record.id, 0, due), 10)
    assert finished.status.value == "COMPLETED" and finished.output == {"got": {"n": 1}}
    assert finished.trigger == "schedule" and finished.workflow_version == 1


async def test_a_process_that_was_down_catches_up_only_the_latest_missed_time(engine: Engine, tenant_id: str) -> None:
    record = await engine.create_workflow(tenant_id, scheduled({"cron": EVERY_5_MIN}))
    due = next_due(EVERY_5_MIN, time.time())
    # Down for four due times: only the last one runs, once.
    assert await Scheduler(engine).tick(due + 3 * 300 + 42) == [fire_id(record.id, 0, due + 900)]
    assert await Scheduler(engine).tick(due + 3 * 300 + 43) == []
    assert len(await schedule_runs(engine, record.id)) == 1


async def test_due_times_before_the_version_was_saved_never_fire(engine: Engine, tenant_id: str) -> None:
    yearly = await engine.create_workflow(tenant_id, scheduled({"cron": "0 0 1 1 *"}))
    scheduler = Scheduler(engine)
    assert await scheduler.tick(time.time()) == []  # the last New Year was before the save
    assert yearly.id in scheduler.scheduled

    # A new version starts over: the old version's times do not fire, the new one's do.
    minutely = await engine.create_workflow(tenant_id, scheduled({"cron": "* * * * *"}))
    saved = await engine.save_workflow(tenant_id, minutely.id, 1, scheduled({"cron": EVERY_5_MIN}))
    assert saved == 2
    assert await Scheduler(engine).tick(time.time()) == []
    due = next_due(EVERY_5_MIN, time.time())
    scheduler.poke()  # (a save in this process would do it)
    assert await scheduler.tick(due + 1) == [fire_id(minutely.id, 0, due)]
    assert scheduler.scheduled[minutely.id].version == 2


async def test_deleted_workflows_stop_and_errors_stay_in_their_schedule(
    engine: Engine, tenant_id: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    doomed = await engine.create_workflow(tenant_id, scheduled({"cron": EVERY_5_MIN}))
    broken = await engine.create_workflow(tenant_id, scheduled({"cron": EVERY_5_MIN}))
    healthy = await engine.create_workflow(tenant_id, scheduled({"cron": EVERY_5_MIN}))
    stale = Scheduler(engine, refresh_seconds=3600)  # indexes now, refreshes only in an hour
    await stale.tick(time.time())
    assert {doomed.id, broken.id, healthy.id} <= set(stale.scheduled)
    assert await engine.workflows.delete(tenant_id, doomed.id)

    graphs = engine.plans.version_graph

    async def failing(workflow_id: str, version: int) -> Any:
        if workflow_id == broken.id:
            raise RuntimeError("boom")
        return await graphs(workflow_id, version)

    monkeypatch.setattr(engine.plans, "version_graph", failing)
    due = next_due(EVERY_5_MIN, time.time())
    assert await stale.tick(due + 1) == [fire_id(healthy.id, 0, due)]
    fresh = Scheduler(engine)
    assert await fresh.tick(due + 2) == []
    assert doomed.id not in fresh.scheduled
    assert await schedule_runs(engine, doomed.id) == [] and await schedule_runs(engine, broken.id) == []

    monkeypatch.setattr(engine.plans, "version_graph", graphs)  # fixed: the failed time is tried again
    assert await stale.tick(due + 3) == [fire_id(broken.id, 0, due)]


async def test_the_loop_sleeps_until_the_next_due_time(engine: Engine, tenant_id: str) -> None:
    record = await engine.create_workflow(tenant_id, scheduled({"cron": EVERY_5_MIN}))
    due = next_due(EVERY_5_MIN, time.time())
    clock = {"now": due - 0.2}
    scheduler = Scheduler(engine, clock=lambda: clock["now"])
    await scheduler.start()
    try:
        await asyncio.sleep(0.1)
        assert await schedule_runs(engine, record.id) == []
        assert 0.05 <= scheduler.sleep_for(clock["now"]) <= 0.25
        clock["now"] = due + 0.5
        scheduler.poke()
        for _ in range(100):
            if await schedule_runs(engine, record.id):
                break
            await asyncio.sleep(0.02)
        assert [r[0] for r in await schedule_runs(engine, record.id)] == [fire_id(record.id, 0, due)]
    finally:
        await scheduler.stop()


async def test_a_saved_or_deleted_schedule_reaches_a_running_scheduler_at_once(engine: Engine, tenant_id: str) -> None:
    scheduler = Scheduler(engine, refresh_seconds=3600)  # it would not look again by itself for an hour
    engine.definition_listeners.append(scheduler.poke)  # as open_runtime wires it
    await scheduler.start()

    async def indexed_soon(workflow_id: str, wanted: bool) -> bool:
        for _ in range(100):
            await asyncio.sleep(0.01)
            if (workflow_id in scheduler.scheduled) is wanted:
                return True
        return False

    try:
        record = await engine.create_workflow(tenant_id, scheduled({"cron": EVERY_5_MIN}))
        assert await indexed_soon(record.id, wanted=True)
        await engine.save_workflow(tenant_id, record.id, 1, scheduled())
        assert await indexed_soon(record.id, wanted=False)
        await engine.save_workflow(tenant_id, record.id, 2, scheduled({"cron": EVERY_5_MIN}))
        assert await indexed_soon(record.id, wanted=True)
        assert await engine.delete_workflow(tenant_id, record.id)
        assert await indexed_soon(record.id, wanted=False)
    finally:
        await scheduler.stop()


async def test_a_scheduled_run_takes_its_workflows_priority(db: Database) -> None:
    """Schedules have no priority of their own: the run, and so its node jobs, is at options.priority."""
    engine = Engine(db, make_test_registry())  # no worker: its start job stays queued to be read
    tenant_id = await engine.tenants.ensure("acme")
    graph = definition([node("start", "start"), end()], [edge("start", "end")], priority=85)
    graph["options"]["schedules"] = [{"cron": EVERY_5_MIN}]
    record = await engine.create_workflow(tenant_id, graph)
    due = next_due(EVERY_5_MIN, time.time())
    run_id = fire_id(record.id, 0, due)
    assert await Scheduler(engine).tick(due + 1) == [run_id]
    async with engine.db.read() as conn:
        assert await run_priority(conn, run_id, is_sqlite=engine.db.is_sqlite) == 85
        jobs = (await conn.execute(sa.select(node_jobs.c.node_id, node_jobs.c.priority))).all()
    assert [tuple(job) for job in jobs] == [("start", 85)]
