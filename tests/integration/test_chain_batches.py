"""Group commit across runs on PostgreSQL (storage/chain_batches.py): chain steps of different runs ready
at the same moment go in one statement, each still deciding its own run alone."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest
import sqlalchemy as sa

from flowdeck.domain.statuses import RunStatus
from flowdeck.engine.engine import Engine
from flowdeck.storage.chain_batches import _ONE_STATEMENT
from flowdeck.storage.database import Database
from flowdeck.storage.state_postgres import PostgresStateManager
from flowdeck.storage.steps import ChainStepInput
from flowdeck.storage.tables import instances
from tests.support.graphs import linear
from tests.support.handlers import make_test_registry
from tests.support.plans import generic_plan_scans
from tests.support.runs import read_outcome


@pytest.fixture
def database_url(postgres_url: str) -> str:
    return postgres_url  # PostgreSQL only: SQLite takes its decisions one by one (and groups its commits)


async def test_concurrent_chains_share_statements_and_each_run_is_whole(engine: Engine, tenant_id: str) -> None:
    workflow = await engine.create_workflow(tenant_id, linear(6))
    ids = await asyncio.gather(*(engine.start_workflow_run(tenant_id, workflow.id, {"i": i}) for i in range(60)))
    runs = await asyncio.gather(*(engine.wait_for_run(i, 60) for i in ids))

    assert [r.status for r in runs] == [RunStatus.COMPLETED] * 60
    assert isinstance(engine.state, PostgresStateManager)
    assert engine.state.chain_batches.largest > 1  # steps of different runs did share a statement
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
    state = idle.state
    assert isinstance(state, PostgresStateManager)

    def step(instance_id: str, expected: int, charge: int = 100) -> ChainStepInput:
        payload = {"output": {"started": True}, "handle": "default"}
        return ChainStepInput(jobs[instance_id], expected, "start", payload, charge, 1_000, "s1", "stepper", 60)

    # The first step goes at once, alone; the two submitted while it is in flight go together.
    _, good, stale = await asyncio.gather(
        state.chain_batches.submit(step(lead, 1)),
        state.chain_batches.submit(step(first, 1)),
        state.chain_batches.submit(step(second, 7)),
    )

    assert state.chain_batches.largest == 2  # one statement took both
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
    """FLOWDECK_MAX_RUN_BYTES in the batch statement: the same condition as the one-run statements."""
    tenant_id = await idle.tenants.ensure("acme")
    workflow = await idle.create_workflow(tenant_id, linear(2))
    lead, fits, past = [await idle.start_workflow_run(tenant_id, workflow.id) for _ in range(3)]
    jobs = {job.instance_id: job for job in await idle.state.claim_jobs("stepper", 10, 60)}
    state = idle.state
    assert isinstance(state, PostgresStateManager)

    def step(instance_id: str, charge: int) -> ChainStepInput:
        payload = {"output": {"started": True}, "handle": "default"}
        return ChainStepInput(jobs[instance_id], 1, "start", payload, charge, 1_000, "s1", "stepper", 60)

    _, good, refused = await asyncio.gather(
        state.chain_batches.submit(step(lead, 10)),
        state.chain_batches.submit(step(fits, 1_000)),
        state.chain_batches.submit(step(past, 1_001)),
    )

    assert state.chain_batches.largest == 2
    assert good.status is RunStatus.RUNNING and good.logged
    assert (refused.status, refused.logged, refused.job_removed, refused.next_job) == (None, False, False, None)
    async with db.read() as conn:
        rows = (await conn.execute(sa.select(instances.c.id, instances.c.output_bytes, instances.c.version))).all()
    counters = {row[0]: (row[1], row[2]) for row in rows}
    assert counters[fits] == (1_000, 2)
    assert counters[past] == (0, 1)  # untouched: the general decision fails the node


async def test_a_lone_step_probes_every_table_by_index_while_postgresql_thinks_them_tiny(postgres_url: str) -> None:
    """The generic plan of a lone run's chain step (the one the chain uses node after node) reads no table
    whole. It is made at a statement's sixth execution and kept for the connection's life: on a fresh
    database, with tables PostgreSQL has never analysed, a plan that joined the step's row to a table
    scanned it all and went on doing so as the table grew (the batch form did: docs/benchmarks.md)."""
    scans = set(await generic_plan_scans(postgres_url, _ONE_STATEMENT))
    assert {table for kind, table in scans if kind == "Seq Scan"} == set()
    assert {("Index Scan", "instances"), ("Index Scan", "node_jobs")} <= scans
    assert ("Index Only Scan", "instance_logs") in scans or ("Index Scan", "instance_logs") in scans
