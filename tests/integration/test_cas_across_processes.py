"""Decisions of one run taken by two processes (two engines, each with its own connections, on one
database): each decision takes the run's next version in one statement, whoever moved the run last
(engine/cas.py), and the run ends whole."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from flowdeck.engine.engine import Engine
from flowdeck.storage.database import Database
from flowdeck.storage.records import Job
from tests.support.graphs import definition, edge, end, node
from tests.support.handlers import make_test_registry
from tests.support.runs import read_outcome

BRANCHES = ("a", "b", "c")


@pytest.fixture
async def other_db(db: Database, database_url: str) -> AsyncIterator[Database]:
    other = Database(database_url)
    yield other
    await other.dispose()


async def _engine(db: Database) -> Engine:
    engine = Engine(db, make_test_registry(), lease_seconds=60.0)
    await engine.start(with_worker=False)  # the test claims and decides itself
    return engine


async def _claim(engine: Engine) -> dict[str, Job]:
    return {job.node_id: job for job in await engine.state.claim_jobs("worker", 10, 60.0)}


async def _decide(engine: Engine, job: Job) -> int:
    """Run the job's node and decide its result in ``engine``; the round trips the decision took."""
    outcome, _ = await engine.executor.run(job)
    engine.db.counter.reset()
    await engine.orchestrator.handle_result(job, outcome)
    return engine.db.counter.round_trips


async def test_a_decision_after_another_process_moved_the_run_on_takes_no_second_try(
    db: Database, other_db: Database
) -> None:
    here, there = await _engine(db), await _engine(other_db)
    try:
        tenant_id = await here.tenants.ensure("acme")
        branches = [node(branch) for branch in BRANCHES]
        edges = [edge("start", branch) for branch in BRANCHES] + [edge(branch, "end") for branch in BRANCHES]
        workflow = await here.create_workflow(tenant_id, definition([node("start", "start"), *branches, end()], edges))
        run_id = await here.start_workflow_run(tenant_id, workflow.id)
        await _decide(here, (await _claim(here))["start"])
        jobs = await _claim(here)

        current = await _decide(here, jobs["a"])  # this process moved the run last
        await _decide(there, jobs["b"])  # the other one moves it on
        stale = await _decide(here, jobs["c"])  # this process's last version is no longer the run's

        # The one-statement step compares with what this process knows and misses once (its one statement;
        # on SQLite in a transaction of its own); the general decision that follows takes the next version
        # at once. Before: a failed update, a read and a second update on top.
        missed_step = 2 if db.is_sqlite else 1
        assert stale == current + missed_step
        await _decide(there, (await _claim(there))["end"])
        outcome = await read_outcome(here, run_id)
        assert outcome.run.status == "COMPLETED"
        assert outcome.per_node("NODE_COMPLETED") == dict.fromkeys(["start", *BRANCHES, "end"], 1)
        assert outcome.run.version == 6  # the start and five decisions, each one version
    finally:
        await there.stop()
        await here.stop()
