"""A PostgreSQL restart under load costs latency, never an error or a stuck run.

The test starts a PostgreSQL cluster of its own (``initdb`` and ``pg_ctl`` on a free port, as the
``postgres`` user when the tests run as root), restarts it (``pg_ctl restart -m fast``: every
connection is closed, new ones are refused until it is back) while runs execute and reads go on, and
stops it itself at the end (by its PID if ``pg_ctl stop`` did not). Under ``CI=true`` a missing
``initdb`` is an error, never a skip.
"""

from __future__ import annotations

import asyncio
import os
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

from flowdeck.engine.engine import Engine
from flowdeck.storage.database import Database
from flowdeck.storage.migrate import upgrade
from tests.support.flowdeck_processes import serve_process
from tests.support.graphs import linear
from tests.support.handlers import make_test_registry
from tests.support.postgres_cluster import Cluster, own_cluster
from tests.support.runs import read_outcome, start
from tests.support.waiting import until


@pytest.fixture
def cluster() -> Iterator[Cluster]:
    with own_cluster() as running:
        yield running


async def test_a_restart_under_load_costs_latency_not_errors(cluster: Cluster) -> None:
    db = Database(cluster.url, pool_size=5, reconnect_seconds=30)
    await db.create_all()
    engine = Engine(db, make_test_registry(), lease_seconds=2.0, poll_interval=0.05)
    await engine.start()
    errors: list[BaseException] = []
    reads = 0
    stop = asyncio.Event()
    run_ids: list[str] = []

    async def read_along() -> None:  # what API reads do meanwhile
        nonlocal reads
        while not stop.is_set():
            try:
                for run_id in run_ids[-3:]:
                    await engine.state.get_instance(run_id)
                    reads += 1
            except Exception as exc:  # every one is a failure the test reports
                errors.append(exc)
            await asyncio.sleep(0.01)

    try:
        tenant_id = await engine.tenants.ensure("acme")
        graph = linear(4)
        for step in graph["nodes"][1:-1]:
            step["config"] = {"sleep": 0.1}  # runs are mid-way when PostgreSQL goes away
        reader = asyncio.create_task(read_along())
        run_ids += [await start(engine, tenant_id, graph) for _ in range(10)]
        await asyncio.to_thread(cluster.pg_ctl, "-m", "fast", "restart")
        run_ids += [await start(engine, tenant_id, graph) for _ in range(10)]  # waits for it, if need be
        runs = [await engine.wait_for_run(run_id, 60) for run_id in run_ids]
        stop.set()
        await reader
        outcomes = [await read_outcome(engine, run_id) for run_id in run_ids]
    finally:
        stop.set()
        await engine.stop()
        await db.dispose()
    assert errors == []
    assert reads > 0
    assert [run.status.value for run in runs] == ["COMPLETED"] * 20
    for outcome in outcomes:
        completed = Counter((r.node_id, r.iteration) for r in outcome.rows if r.event_type == "NODE_COMPLETED")
        assert set(completed.values()) == {1}  # no node twice
        assert len(completed) == 6  # start, s1..s4, end


async def test_serve_started_while_postgresql_is_down_waits_for_it(cluster: Cluster, tmp_path: Path) -> None:
    """It said "Application startup failed" and exited at its first connection (seen in the chaos suite,
    when serve was started again during a PostgreSQL restart); now it waits, saying so, as a running one does."""
    await upgrade(cluster.url)
    await asyncio.to_thread(cluster.stop)
    env = {
        **os.environ,
        "FLOWDECK_DATABASE_URL": cluster.url,
        "FLOWDECK_DB_RECONNECT_SECONDS": "60",
        "FLOWDECK_SERVE_WORKERS": "0",
        "FLOWDECK_SANDBOX_WORKERS": "1",
    }
    serve = serve_process("serve", env, tmp_path)
    serve.start()
    try:
        await until(
            lambda: asyncio.to_thread(serve.tail),
            lambda log: "takes no connections yet" in log or not serve.alive,
            what="serve saying it waits for PostgreSQL",
        )
        assert serve.alive, serve.tail()
        await asyncio.to_thread(cluster.start)
        await asyncio.to_thread(serve.wait_ready)
    finally:
        serve.stop()
