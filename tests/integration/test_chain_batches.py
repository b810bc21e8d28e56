"""Group commit across runs (storage/step_batches.py): chain steps of different runs ready at the same
moment go together, in one statement on PostgreSQL (storage/chain_batches.py) and in one write
transaction on SQLite (storage/state_sqlite.py), each still deciding its own run alone."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from flowdeck.domain.statuses import RunStatus
from flowdeck.engine.engine import Engine
from flowdeck.storage.chain_batches import _ONE_STATEMENT
from flowdeck.storage.database import Database
from flowdeck.storage.state_postgres import PostgresStateManager
from flowdeck.storage.state_sqlite import SqliteStateManager
from flowdeck.storage.steps import ChainStep, ChainStepInput
from flowdeck.storage.tables import instances
from tests.support.graphs import linear
from tests.support.handlers import make_test_registry
from tests.support.plans import generic_plan_scans
from tests.support.runs import read_outcome
from tests.support.waiting import until


def _batching(engine: Engine) -> PostgresStateManager | SqliteStateManager:
    state = engine.state
    assert isinstance(state, PostgresStateManager | SqliteStateManager), state
    return state


async def _together(engine: Engine, *steps: ChainStepInput, return_exceptions: bool = False) -> list[Any]:
    """Submit the steps at once: the first goes alone, the others while it is in flight (PostgreSQL: its round
    trip; SQLite: it waits for the write lock, which another write transaction holds until all are in)."""
    state = _batching(engine)
    db = state.db
    if not db.is_sqlite:
        submits = (state.chain_batches.submit(step) for step in steps)
        return list(await asyncio.gather(*submits, return_exceptions=return_exceptions))
    held, done = asyncio.Event(), asyncio.Event()

    async def hold() -> None:
        async with db.transaction():
            held.set()
            await done.wait()

    holder = asyncio.create_task(hold())
    await held.wait()
    submitted = [asyncio.create_task(state.chain_batches.submit(step)) for step in steps]
    await until(lambda: state.chain_batches.queued == len(steps) - 1, what="the later steps queued")
    done.set()
    await holder
    results = list(await asyncio.gather(*submitted, return_exceptions=return_exceptions))
    await state.settle()  # the batch was early-released: SQLite's reads see it once its group commits
    return results


async def _another_process_writing(url: str, stop: asyncio.Event) -> None:
    """Write transactions of a second ``Database`` on the file (as another process's would), each holding the
    write lock for a moment, until ``stop``: this process's chain steps then wait for the lock together."""
    other = Database(url)
    try:
        while not stop.is_set():
            async with other.transaction():
                await asyncio.sleep(0.005)
    finally:
        await other.dispose()


async def test_concurrent_chains_share_statements_and_each_run_is_whole(engine: Engine, tenant_id: str) -> None:
    workflow = await engine.create_workflow(tenant_id, linear(6))
    stop = asyncio.Event()
    db = engine.state.db
    other = asyncio.create_task(_another_process_writing(db.url, stop)) if db.is_sqlite else None
    try:
        ids = await asyncio.gather(*(engine.start_workflow_run(tenant_id, workflow.id, {"i": i}) for i in range(60)))
        runs = await asyncio.gather(*(engine.wait_for_run(i, 60) for i in ids))
    finally:
        stop.set()
        if other is not None:
            await other

    assert [r.status for r in runs] == [RunStatus.COMPLETED] * 60
    assert _batching(engine).chain_batches.largest > 1  # steps of different runs did go together
    nodes = ["start", "s1", "s2", "s3", "s4", "s5", "s6", "end"]
    for instance_id in ids:
        outcome = await read_outcome(engine, instance_id)
        for event in ("NODE_DISPATCHED", "NODE_STARTED", "NODE_COMPLETED"):
            assert outcome.per_node(event) == dict.fromkeys(nodes, 1), (instance_id, event)
        for node_id in nodes:
            order = [r.event_type for r in outcome.rows if r.node_id == node_id]
            assert order == ["NODE_DISPATCHED", "NODE_STARTED", "NODE_COMPLETED"], (instance_id, node_id)


@pytest.fixture
async def idle(db: Database) -> AsyncIterator[Engine]:
    engine = Engine(db, make_test_registry())  # no worker: the test takes the steps itself
    await engine.start(with_worker=False)
    yield engine
    await engine.stop()


async def test_a_lost_compare_and_swap_in_a_batch_rolls_back_only_its_own_run(idle: Engine) -> None:
    tenant_id = await idle.tenants.ensure("acme")
    workflow = await idle.create_workflow(tenant_id, linear(2))
    lead, first, second = [await idle.start_workflow_run(tenant_id, workflow.id) for _ in range(3)]
    jobs = {job.instance_id: job for job in await idle.state.claim_jobs("stepper", 10, 60)}
    state = _batching(idle)

    def step(instance_id: str, expected: int, charge: int = 100) -> ChainStepInput:
        payload = {"output": {"started": True}, "handle": "default"}
        return ChainStepInput(jobs[instance_id], expected, "start", payload, charge, 1_000, "s1", "stepper", 60)

    # The first step goes at once, alone; the two submitted while it is in flight go together.
    _, good, stale = await _together(idle, step(lead, 1), step(first, 1), step(second, 7))

    assert state.chain_batches.largest == 2  # one batch took both
    assert (good.status, good.logged, good.job_removed) == (RunStatus.RUNNING, True, True)
    assert good.next_job is not None and (good.next_job.node_id, good.next_job.lease_owner) == ("s1", "stepper")
    assert (stale.status, stale.logged, stale.job_removed, stale.next_job) == (None, False, False, None)
    won, lost = await read_outcome(idle, first), await read_outcome(idle, second)
    assert won.per_node("NODE_COMPLETED") == {"start": 1} and won.status_of("s1") == "RUNNING"
    assert lost.per_node("NODE_COMPLETED") == {} and lost.status_of("start") == "RUNNING"
    assert (won.run.version, lost.run.version) == (2, 1)  # the stale one left its run untouched


async def test_a_step_past_its_runs_output_budget_in_a_batch_writes_nothing_and_the_others_go_on(
    idle: Engine, db: Database
) -> None:
    """FLOWDECK_MAX_RUN_BYTES in the batch: the same condition as the one-run statements."""
    tenant_id = await idle.tenants.ensure("acme")
    workflow = await idle.create_workflow(tenant_id, linear(2))
    lead, fits, past = [await idle.start_workflow_run(tenant_id, workflow.id) for _ in range(3)]
    jobs = {job.instance_id: job for job in await idle.state.claim_jobs("stepper", 10, 60)}
    state = _batching(idle)

    def step(instance_id: str, charge: int) -> ChainStepInput:
        payload = {"output": {"started": True}, "handle": "default"}
        return ChainStepInput(jobs[instance_id], 1, "start", payload, charge, 1_000, "s1", "stepper", 60)

    _, good, refused = await _together(idle, step(lead, 10), step(fits, 1_000), step(past, 1_001))

    assert state.chain_batches.largest == 2
    assert good.status is RunStatus.RUNNING and good.logged
    assert (refused.status, refused.logged, refused.job_removed, refused.next_job) == (None, False, False, None)
    async with db.read() as conn:
        rows = (await conn.execute(sa.select(instances.c.id, instances.c.output_bytes, instances.c.version))).all()
    counters = {row[0]: (row[1], row[2]) for row in rows}
    assert counters[fits] == (1_000, 2)
    assert counters[past] == (0, 1)  # untouched: the general decision fails the node


@pytest.fixture
async def idle_sqlite(tmp_path: Path) -> AsyncIterator[Engine]:
    db = Database(f"sqlite+aiosqlite:///{tmp_path / 'flowdeck.db'}")
    await db.create_all()
    engine = Engine(db, make_test_registry())
    await engine.start(with_worker=False)
    yield engine
    await engine.stop()
    await db.dispose()


async def test_a_failed_step_fails_its_whole_sqlite_batch_and_writes_nothing(idle_sqlite: Engine) -> None:
    """SQLite takes a batch in one write transaction: a step that raises rolls all of it back, and every
    step of the batch raises (as a failed statement does on PostgreSQL); the general decision, or the lease,
    takes them again. (PostgreSQL's batch is one statement: it fails whole by itself.)"""
    idle, db = idle_sqlite, idle_sqlite.state.db
    tenant_id = await idle.tenants.ensure("acme")
    workflow = await idle.create_workflow(tenant_id, linear(2))
    lead, good, broken = [await idle.start_workflow_run(tenant_id, workflow.id) for _ in range(3)]
    jobs = {job.instance_id: job for job in await idle.state.claim_jobs("stepper", 10, 60)}

    def step(instance_id: str, payload: object) -> ChainStepInput:
        return ChainStepInput(jobs[instance_id], 1, "start", payload, 10, 1_000, "s1", "stepper", 60)

    fine = {"output": {"started": True}, "handle": "default"}
    alone, *batch = await _together(
        idle, step(lead, fine), step(good, fine), step(broken, {"output": object()}), return_exceptions=True
    )
    assert isinstance(alone, ChainStep) and alone.status is RunStatus.RUNNING
    assert [type(result) for result in batch] == [TypeError, TypeError]  # a payload JSON cannot encode
    async with db.read() as conn:
        rows = (await conn.execute(sa.select(instances.c.id, instances.c.version))).all()
    versions = dict(rows)
    assert versions[lead] == 2  # went alone, before
    assert (versions[good], versions[broken]) == (1, 1)  # the batch wrote nothing
    assert (await read_outcome(idle, good)).per_node("NODE_COMPLETED") == {}


async def test_a_lone_step_probes_every_table_by_index_while_postgresql_thinks_them_tiny(postgres_url: str) -> None:
    """The generic plan of a lone run's chain step (the one the chain uses node after node) reads no table
    whole. It is made at a statement's sixth execution and kept for the connection's life: on a fresh
    database, with tables PostgreSQL has never analysed, a plan that joined the step's row to a table
    scanned it all and went on doing so as the table grew (the batch form did: docs/benchmarks.md)."""
    scans = set(await generic_plan_scans(postgres_url, _ONE_STATEMENT))
    assert {table for kind, table in scans if kind == "Seq Scan"} == set()
    assert {("Index Scan", "instances"), ("Index Scan", "node_jobs")} <= scans
    assert ("Index Only Scan", "instance_logs") in scans or ("Index Scan", "instance_logs") in scans
