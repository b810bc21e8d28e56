"""A run started in a process whose worker has a free slot begins on that worker: its start node is leased to
it in the run's first transaction and runs without a claim (engine/worker.py ``reserve_start``); with no slot
free, the start node waits in the queue like any other job. Both databases, with and without labels (on
PostgreSQL a run without them starts in one statement, a labelled one on the general path)."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Any

import pytest

from flowdeck.engine.engine import Engine
from flowdeck.storage.database import Database
from flowdeck.storage.disconnects import DatabaseUnavailableError
from flowdeck.storage.records import LogRow
from tests.support.graphs import definition, edge, end, node
from tests.support.handlers import make_test_registry
from tests.support.runs import read_outcome
from tests.support.waiting import until

LABELS = {"team": "data"}
START_PATHS = pytest.mark.parametrize("labels", [None, LABELS], ids=["one-statement start", "labelled start"])


def _sleepy() -> dict[str, object]:
    nodes = [node("start", "start"), node("s1", config={"sleep": "0.5"}), end()]
    return definition(nodes, [edge("start", "s1"), edge("s1", "end")])


def _row(rows: list[LogRow], event_type: str, node_id: str | None = None) -> LogRow:
    return next(r for r in rows if r.event_type == event_type and r.node_id == node_id)


@START_PATHS
async def test_a_run_begins_on_the_worker_of_the_process_that_started_it(
    engine: Engine, tenant_id: str, labels: dict[str, str] | None
) -> None:
    workflow = await engine.create_workflow(tenant_id, _sleepy())
    run_id = await engine.start_workflow_run(tenant_id, workflow.id, {"n": 1}, labels=labels)
    run = await engine.wait_for_run(run_id, 20)
    assert run.status.value == "COMPLETED"
    rows = (await read_outcome(engine, run_id)).rows
    started = _row(rows, "NODE_STARTED", "start")
    assert started.created_at == _row(rows, "INPUT_SET").created_at  # leased in the run's first transaction
    assert sum(1 for r in rows if r.event_type == "NODE_STARTED" and r.node_id == "start") == 1


@START_PATHS
async def test_with_no_slot_free_the_start_node_waits_in_the_queue(db: Database, labels: dict[str, str] | None) -> None:
    """...and is claimed the moment the slot frees: the worker polls only every 30 s here."""
    engine = Engine(db, make_test_registry(), lease_seconds=2.0, poll_interval=30, concurrency=1)
    await engine.start()
    try:
        tenant_id = await engine.tenants.ensure("acme")
        workflow = await engine.create_workflow(tenant_id, _sleepy())
        first = await engine.start_workflow_run(tenant_id, workflow.id, labels=labels)
        await until(  # s1 runs: the worker's one slot is taken
            lambda: read_outcome(engine, first), lambda outcome: "s1" in outcome.nodes, what="s1 to be dispatched"
        )
        second = await engine.start_workflow_run(tenant_id, workflow.id, labels=labels)
        for run_id in (first, second):
            assert (await engine.wait_for_run(run_id, 20)).status.value == "COMPLETED"
        rows = (await read_outcome(engine, second)).rows
        assert _row(rows, "NODE_STARTED", "start").created_at > _row(rows, "INPUT_SET").created_at  # claimed later
        first_rows = (await read_outcome(engine, first)).rows
        assert _row(rows, "NODE_STARTED", "start").created_at >= _row(first_rows, "NODE_COMPLETED", "end").created_at
    finally:
        await engine.stop()


@pytest.mark.parametrize("database_url", ["postgres"], indirect=True)
async def test_a_start_whose_answer_was_lost_runs_the_start_node_it_leased_at_once(db: Database) -> None:
    """PostgreSQL's one-statement start committed and its connection closed before the answer came: the start is
    sent again, finds its run made, and the worker runs the start node leased to it instead of leaving it to wait
    out a lease (600 s here) for another worker to take it over."""
    engine = Engine(db, make_test_registry(), lease_seconds=600.0, poll_interval=0.05)
    await engine.start()
    try:
        tenant_id = await engine.tenants.ensure("acme")
        workflow = await engine.create_workflow(tenant_id, _sleepy())
        real, cut = db.autocommit, []

        @contextlib.asynccontextmanager
        async def answer_lost_once(**kwargs: Any) -> AsyncIterator[Any]:
            async with real(**kwargs) as conn:
                yield conn
            if not cut:
                cut.append(True)
                raise ConnectionResetError("connection reset by peer")

        db.autocommit = answer_lost_once  # type: ignore[method-assign]
        try:
            run_id = await engine.start_workflow_run(tenant_id, workflow.id)
        finally:
            del db.autocommit
        run = await engine.wait_for_run(run_id, 20)
        assert (run.status.value, cut) == ("COMPLETED", [True])
        rows = (await read_outcome(engine, run_id)).rows
        started = [r for r in rows if r.event_type == "NODE_STARTED" and r.node_id == "start"]
        assert [r.payload for r in started] == [{"workerId": engine.worker.id}]  # no takeover
    finally:
        await engine.stop()


@pytest.mark.parametrize("database_url", ["postgres"], indirect=True)
async def test_a_start_whose_connection_keeps_closing_is_sent_again_then_answered_unavailable(db: Database) -> None:
    """PostgreSQL closes the start's connection at every try (a restart in stages): the start is sent again
    until ``FLOWDECK_DB_RECONNECT_SECONDS`` is spent, then raises the error the API answers 503 for, naming
    the run (it may have started), never an unexpected error (a 500)."""
    engine = Engine(db, make_test_registry(), poll_interval=0.05)
    await engine.start()
    try:
        tenant_id = await engine.tenants.ensure("acme")
        workflow = await engine.create_workflow(tenant_id, _sleepy())
        tries: list[int] = []

        @contextlib.asynccontextmanager
        async def always_closed(**kwargs: Any) -> AsyncIterator[Any]:
            tries.append(1)
            raise ConnectionResetError("connection reset by peer")
            yield  # pragma: no cover -- an async context manager that never enters

        db.autocommit = always_closed  # type: ignore[method-assign]
        db.reconnect_seconds = 0.3
        try:
            with pytest.raises(DatabaseUnavailableError, match="may or may not have started"):
                await engine.start_workflow_run(tenant_id, workflow.id)
        finally:
            del db.autocommit
        assert len(tries) > 3  # sent again while the patience lasted, not three times and a 500
    finally:
        await engine.stop()
