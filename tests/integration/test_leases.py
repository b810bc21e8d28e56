"""Leases and takeovers (issue 14 point 8), driven deterministically on a fake clock: a worker paused
past its lease loses the node to another worker; its result is then recorded as late and starts
nothing; the takeover is a new attempt with its own NODE_STARTED row naming the new holder; a node
whose worker died more than maxAttempts times fails."""

from __future__ import annotations

import asyncio

import sqlalchemy as sa

from flowdeck.domain.statuses import RunStatus
from flowdeck.engine.engine import Engine
from flowdeck.engine.publisher import RunUpdate
from flowdeck.storage.database import Database
from flowdeck.storage.records import Job
from flowdeck.storage.run_queries import RunQueries
from flowdeck.storage.tables import node_jobs
from tests.support.clock import FakeClock
from tests.support.graphs import definition, edge, end, linear, node
from tests.support.handlers import make_test_registry
from tests.support.runs import read_outcome, start

LEASE = 10.0


async def _engine(db: Database, clock: FakeClock) -> Engine:
    return Engine(db, make_test_registry(), lease_seconds=LEASE, clock=clock)  # no worker: the test drives it


async def test_a_stale_holders_result_is_late_and_starts_nothing(db: Database) -> None:
    clock = FakeClock()
    engine = await _engine(db, clock)
    tenant_id = await engine.tenants.ensure("acme")
    instance_id = await start(engine, tenant_id, linear(2))
    [first] = await engine.state.claim_jobs("w0", 1, LEASE)
    outcome, _ = await engine.executor.run(first)
    assert await engine.orchestrator.handle_result(first, outcome) is None  # s1 is queued
    [paused] = await engine.state.claim_jobs("paused", 1, LEASE)
    clock.advance(LEASE + 1)  # the paused worker misses its heartbeats: its lease runs out
    [taken] = await engine.state.claim_jobs("rescuer", 1, LEASE)
    assert (taken.node_id, taken.attempt, taken.lease_owner, taken.takeovers) == ("s1", 2, "rescuer", 1)

    stale_outcome, _ = await engine.executor.run(paused)
    assert await engine.orchestrator.handle_result(paused, stale_outcome, claim_for="paused") is None
    rows = (await read_outcome(engine, instance_id)).rows
    assert [(r.event_type, r.node_id, r.node_attempt) for r in rows if r.node_id][-1] == ("NODE_COMPLETED", "s1", 1)
    assert not any(r.node_id == "s2" for r in rows)  # the late result started nothing

    outcome, _ = await engine.executor.run(taken)
    follow = await engine.orchestrator.handle_result(taken, outcome, claim_for="rescuer")
    while follow is not None:  # the new holder's result is the one that moves the run on
        outcome, _ = await engine.executor.run(follow)
        follow = await engine.orchestrator.handle_result(follow, outcome, claim_for="rescuer")
    result = await read_outcome(engine, instance_id)
    assert result.run.status.value == "COMPLETED"
    assert result.count("NODE_DISPATCHED", "s2") == 1
    started = [(r.node_attempt, r.payload) for r in result.rows if r.event_type == "NODE_STARTED" and r.node_id == "s1"]
    assert started == [(1, {"workerId": "paused"}), (2, {"workerId": "rescuer", "takeovers": 1})]
    s1 = result.nodes["s1"]
    assert (s1.status.value, s1.attempt, s1.worker_id) == ("COMPLETED", 2, "rescuer")
    assert s1.attempt_in_retry == 1  # a takeover spends no attempt of the retry budget ("attempt 1 of 3")
    assert s1.output == {"node": "s1", "attempt": 2}  # the accepted result, not the stale one
    assert result.nodes["s2"].worker_id == "rescuer"  # the chain went on with the holder


async def _finish(engine: Engine, worker: str) -> None:
    """Run every job that is due until none is left (no clock moves: nothing waits on a timer here)."""
    while jobs := await engine.state.claim_jobs(worker, 10, LEASE):
        for job in jobs:
            follow: Job | None = job
            while follow is not None:
                outcome, _ = await engine.executor.run(follow)
                follow = await engine.orchestrator.handle_result(follow, outcome, claim_for=worker)


async def test_a_stale_result_logged_after_the_takeovers_changes_no_later_nodes_context(db: Database) -> None:
    """Found by the chaos suite: a worker frozen past its lease woke up after the worker that took its node
    over had finished it, and its late NODE_COMPLETED row, last in the log, became the output every node
    whose context was folded after it saw (a join, an end, a loop's results), while the nodes started at
    once saw the holder's. The output that counts is the holder's, wherever the late row lands."""
    clock = FakeClock()
    engine = await _engine(db, clock)
    tenant_id = await engine.tenants.ensure("acme")
    graph = definition(
        [node("start", "start"), node("s1"), node("s2"), end(params={"seen": "{{ ctx.s1.attempt }}"})],
        [edge("start", "s1"), edge("s1", "s2"), edge("s2", "end")],
    )
    instance_id = await start(engine, tenant_id, graph)
    [first] = await engine.state.claim_jobs("w0", 1, LEASE)
    outcome, _ = await engine.executor.run(first)
    assert await engine.orchestrator.handle_result(first, outcome) is None  # s1 is queued
    [paused] = await engine.state.claim_jobs("paused", 1, LEASE)
    stale_outcome, _ = await engine.executor.run(paused)  # it ran, then froze before reporting
    clock.advance(LEASE + 1)
    [taken] = await engine.state.claim_jobs("rescuer", 1, LEASE)
    outcome, _ = await engine.executor.run(taken)
    assert await engine.orchestrator.handle_result(taken, outcome) is None  # s2 is queued, not yet run
    with engine.publisher.subscribe(instance_id) as watched:
        assert await engine.orchestrator.handle_result(paused, stale_outcome, claim_for="paused") is None  # late
        marker = RunUpdate(instance_id, RunStatus.RUNNING, -1.0)
        engine.publisher.publish([marker])  # anything the late result published arrives before it
        shown = []
        while (update := await asyncio.wait_for(watched.get(), timeout=5)) is not marker:
            shown.append(update)
    assert shown == []  # a browser is not told s1 completed again, with the stale output

    await _finish(engine, "rescuer")
    result = await read_outcome(engine, instance_id)
    assert [r.node_attempt for r in result.rows if r.event_type == "NODE_COMPLETED" and r.node_id == "s1"] == [2, 1]
    assert result.run.status.value == "COMPLETED"
    assert result.run.output == {"seen": 2}  # the holder's output, as s2 saw it and the run page shows it
    assert result.nodes["s1"].output == {"node": "s1", "attempt": 2}


async def test_a_stale_result_never_removes_the_job_that_took_its_id(db: Database) -> None:
    """Found by the chaos suite: SQLite gives a deleted row's id to the next row inserted, so the successor's
    job often has the id of the job a stale holder still names, at the same attempt 1. The stale result
    removed it as its own, and the run completed without running the successor."""
    clock = FakeClock()
    engine = await _engine(db, clock)
    tenant_id = await engine.tenants.ensure("acme")
    instance_id = await start(engine, tenant_id, linear(2))
    [first] = await engine.state.claim_jobs("w0", 1, LEASE)
    outcome, _ = await engine.executor.run(first)
    assert await engine.orchestrator.handle_result(first, outcome) is None
    [paused] = await engine.state.claim_jobs("paused", 1, LEASE)
    stale_outcome, _ = await engine.executor.run(paused)
    clock.advance(LEASE + 1)
    [taken] = await engine.state.claim_jobs("rescuer", 1, LEASE)
    outcome, _ = await engine.executor.run(taken)
    assert await engine.orchestrator.handle_result(taken, outcome) is None  # s2's job is queued
    async with db.read() as conn:
        [(s2_job_id,)] = (await conn.execute(sa.select(node_jobs.c.id).where(node_jobs.c.node_id == "s2"))).all()
    if db.is_sqlite:
        assert s2_job_id == paused.id  # the case: the id the stale holder names is now s2's job's
    assert await engine.orchestrator.handle_result(paused, stale_outcome, claim_for="paused") is None
    async with db.read() as conn:
        left = (await conn.execute(sa.select(node_jobs.c.node_id, node_jobs.c.attempt))).all()
    assert left == [("s2", 1)]
    assert (await read_outcome(engine, instance_id)).run.status.value == "RUNNING"
    await _finish(engine, "rescuer")
    result = await read_outcome(engine, instance_id)
    assert result.run.status.value == "COMPLETED"
    assert result.count("NODE_COMPLETED", "s2") == 1


async def test_a_stale_iteration_result_changes_no_loop_output(db: Database) -> None:
    """The same for a loop body's sink: the loop's ``items`` are the holders' results."""
    clock = FakeClock()
    engine = await _engine(db, clock)
    tenant_id = await engine.tenants.ensure("acme")
    graph = definition(
        [
            node("start", "start"),
            node("each", "loop", config={"items": [1, 2], "concurrency": 2}),
            node("body"),
            end(params={"items": "{{ ctx.each.items }}"}),
        ],
        [edge("start", "each"), edge("each", "body", "loop"), edge("each", "end", "done")],
    )
    instance_id = await start(engine, tenant_id, graph)
    for _ in range(2):  # start, then the loop (which queues both iterations)
        [job] = await engine.state.claim_jobs("w0", 1, LEASE)
        outcome, _ = await engine.executor.run(job)
        assert await engine.orchestrator.handle_result(job, outcome) is None
    paused = await engine.state.claim_jobs("paused", 2, LEASE)
    assert sorted(j.iteration for j in paused) == ["0", "1"]
    stale = {j.iteration: (j, (await engine.executor.run(j))[0]) for j in paused}  # ran, then froze
    clock.advance(LEASE + 1)
    taken = {j.iteration: j for j in await engine.state.claim_jobs("rescuer", 2, LEASE)}
    outcome, _ = await engine.executor.run(taken["0"])
    assert await engine.orchestrator.handle_result(taken["0"], outcome) is None  # iteration 0 done, 1 runs
    job, late = stale["0"]
    assert await engine.orchestrator.handle_result(job, late, claim_for="paused") is None  # late, after it
    outcome, _ = await engine.executor.run(taken["1"])
    assert await engine.orchestrator.handle_result(taken["1"], outcome) is None
    await _finish(engine, "rescuer")
    result = await read_outcome(engine, instance_id)
    assert result.run.status.value == "COMPLETED"
    assert result.run.output == {"items": [{"node": "body", "attempt": 2}] * 2}


async def test_the_run_view_and_timeline_show_who_holds_each_attempt(db: Database) -> None:
    clock = FakeClock()
    engine = await _engine(db, clock)
    tenant_id = await engine.tenants.ensure("acme")
    instance_id = await start(engine, tenant_id, linear(1))
    await engine.state.claim_jobs("first", 1, LEASE)
    clock.advance(LEASE + 1)
    [taken] = await engine.state.claim_jobs("second", 1, LEASE)
    queries = RunQueries(engine.db, engine.state)
    view = await queries.run_view(tenant_id, instance_id)
    assert view is not None
    assert view.nodes["start"].to_json()["workerId"] == "second"
    timeline = await queries.timeline(tenant_id, instance_id)
    assert timeline is not None
    bars = [(b.node_id, b.attempt, b.status.value, b.worker_id, b.taken_over) for b in timeline]
    assert bars == [("start", 1, "FAILED", "first", True), ("start", 2, "RUNNING", "second", False)]
    assert taken.attempt == 2


async def test_a_node_whose_worker_died_more_than_max_attempts_times_fails(db: Database) -> None:
    clock = FakeClock()
    engine = await _engine(db, clock)
    tenant_id = await engine.tenants.ensure("acme")
    graph = definition(
        [node("start", "start"), node("fragile", retry={"maxAttempts": 2}), end()],
        [edge("start", "fragile"), edge("fragile", "end")],
    )
    instance_id = await start(engine, tenant_id, graph)
    [first] = await engine.state.claim_jobs("w0", 1, LEASE)
    outcome, _ = await engine.executor.run(first)
    assert await engine.orchestrator.handle_result(first, outcome) is None  # "fragile" is queued
    holders = []
    for worker in ("w1", "w2", "w3"):  # each dies holding it: two takeovers are allowed, not a third
        clock.advance(LEASE + 1)
        [job] = await engine.state.claim_jobs(worker, 1, LEASE)
        holders.append((job.attempt, job.takeovers))
    assert holders == [(1, 0), (2, 1), (3, 2)]
    clock.advance(LEASE + 1)
    [last] = await engine.state.claim_jobs("w4", 1, LEASE)
    assert last.takeovers == 3
    outcome, _ = await engine.executor.run(last)
    await engine.orchestrator.handle_result(last, outcome, claim_for="w4")
    result = await read_outcome(engine, instance_id)
    assert result.run.status.value == "FAILED"
    assert result.status_of("fragile") == "FAILED"
    assert "taken over 3 times" in (result.run.error or "")
    assert "more than maxAttempts (2)" in (result.run.error or "")


async def test_every_delayed_job_starts_on_its_own_timer_not_at_the_next_poll(db: Database) -> None:
    """The poll interval is a minute: only the timers can start the delayed nodes in time."""
    engine = Engine(db, make_test_registry(), lease_seconds=30, poll_interval=60)
    await engine.start()
    try:
        tenant_id = await engine.tenants.ensure("acme")
        waits = [0.2, 0.4, 0.6]
        ids = []
        for seconds in waits:
            graph = definition(
                [node("start", "start"), node("wait", "delay", config={"seconds": seconds}), node("after"), end()],
                [edge("start", "wait"), edge("wait", "after"), edge("after", "end")],
            )
            ids.append(await start(engine, tenant_id, graph))
        runs = await asyncio.gather(*(engine.wait_for_run(i, 20) for i in ids))
        assert [r.status.value for r in runs] == ["COMPLETED"] * 3
    finally:
        await engine.stop()


async def test_a_heartbeat_never_waits_on_a_job_a_decision_holds(postgres_url: str) -> None:
    """A decision holds its job's row while it writes; the heartbeat renews every other lease at once and
    leaves that one for its next beat, rather than queueing behind the decision (its wait delayed every
    other renewal, and a decision that then locked another of the worker's jobs deadlocked with it)."""
    db = Database(postgres_url)
    engine = Engine(db, make_test_registry())
    now = engine.state.clock()
    rows = [
        {"instance_id": f"lease-{n}-{now}", "node_id": "a", "attempt": 1, "available_at": now + 5, "created_at": now}
        for n in range(2)
    ]
    async with db.transaction() as conn:
        held_id, free_id = (
            (await conn.execute(node_jobs.insert().values(lease_owner="w1").returning(node_jobs.c.id), rows))
            .scalars()
            .all()
        )
    try:
        async with db.engine.connect() as decision:
            await decision.execute(sa.select(node_jobs.c.id).where(node_jobs.c.id == held_id).with_for_update())
            renewed = await asyncio.wait_for(engine.state.extend_leases("w1", [held_id, free_id], 60), 10)
            await decision.rollback()
        assert renewed == {free_id}
        async with db.read() as conn:
            due = dict((await conn.execute(sa.select(node_jobs.c.id, node_jobs.c.available_at))).all())
        assert due[free_id] >= now + 60 and due[held_id] == now + 5
        # the next beat, the decision gone, renews it
        assert await engine.state.extend_leases("w1", [held_id, free_id], 60) == {held_id, free_id}
    finally:
        async with db.transaction() as conn:
            await conn.execute(node_jobs.delete().where(node_jobs.c.id.in_([held_id, free_id])))
        await db.dispose()
