"""PostgreSQL closing idle connections (``idle_session_timeout``, ``pg_terminate_backend``) costs requests and
runs nothing: no 5xx, no run lost or stuck, no node completed twice.

The server closes a pooled connection that stayed idle past ``idle_session_timeout`` with a FATAL (57P05);
a statement sent just then is answered by that FATAL and did not run, so it is sent again on a fresh
connection, a write included (storage/disconnects.py ``unsent``). A COMMIT whose answer is lost is taken
again by the engine, which is correct even when the first COMMIT did land (its log writes are idempotent):
shown here by a COMMIT that lands and then reports its connection lost.

PostgreSQL only, in a database of the test's own whose ``idle_session_timeout`` is 200 ms (``ALTER DATABASE``).
"""

from __future__ import annotations

import asyncio
import subprocess
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import asyncpg  # type: ignore[import-untyped]
import pytest
import sqlalchemy as sa
from sqlalchemy.engine import make_url

from flowdeck.engine.engine import Engine
from flowdeck.storage import database as database_module
from flowdeck.storage.database import Database
from flowdeck.storage.disconnects import WriteTrack
from flowdeck.storage.tables import instance_logs
from tests.api.conftest import serve
from tests.conftest import POSTGRES_URL, scratch_database
from tests.support.graphs import diamond, linear
from tests.support.handlers import make_test_registry
from tests.support.runs import read_outcome, start

IDLE_MS = 200


@pytest.fixture
def idle_url(postgres_url: str) -> Iterator[str]:
    """A database of its own whose sessions PostgreSQL closes after ``IDLE_MS`` idle."""
    with scratch_database("flowdeck_idle", settings={"idle_session_timeout": f"{IDLE_MS}ms"}) as url:
        yield url


async def _backends(admin: asyncpg.Connection, database: str) -> set[int]:
    rows = await admin.fetch("SELECT pid FROM pg_stat_activity WHERE datname = $1", database)
    return {row["pid"] for row in rows}


async def _idled_out(admin: asyncpg.Connection, database: str, pids: set[int]) -> int:
    """The event the test waits for: PostgreSQL closed the backends of ``pids`` that stayed idle too long (all
    but the few the engine's poll keeps busy: it takes the pool's connections in turn every 50 ms), so the
    pool now holds connections that are dead. Returns how many it closed."""
    async with asyncio.timeout(20):
        while len(pids - await _backends(admin, database)) < len(pids) - 4:
            await asyncio.sleep(0.05)
    return len(pids - await _backends(admin, database))


async def _admin(url: str) -> asyncpg.Connection:
    u = make_url(POSTGRES_URL)  # another database: the idle timeout is not this connection's
    return await asyncpg.connect(host=u.host, port=u.port or 5432, user=u.username, database=u.database)


def _completed_twice(rows: list[Any]) -> list[Any]:
    return [key for key, count in Counter(rows).items() if count > 1]


async def test_requests_after_the_server_closed_idle_connections_answer_2xx(idle_url: str, tmp_path: Path) -> None:
    name = make_url(idle_url).database
    assert name is not None
    db = Database(idle_url, pool_size=10)
    admin = await _admin(idle_url)
    statuses: Counter[int] = Counter()
    try:
        async with serve(db, tmp_path) as server:
            account = await server.account("idle@acme.test", "acme-idle")
            async with account.client as client:
                created = await client.post("/api/workflows", json=diamond(3))
                assert created.status_code == 201, created.text
                workflow_id, version = created.json()["id"], 1
                run_ids: list[str] = []
                idled_out = 0
                for _ in range(5):  # each round after the first: the pool holds connections the server closed
                    answers = await asyncio.gather(
                        *(client.post(f"/api/workflows/{workflow_id}/runs") for _ in range(4)),
                        *(client.get("/api/runs", params={"workflowId": workflow_id}) for _ in range(6)),
                        client.get("/api/workflows"),
                        client.put(f"/api/workflows/{workflow_id}", json={**diamond(3), "version": version}),
                    )
                    statuses.update(answer.status_code for answer in answers)
                    run_ids += [a.json()["instanceId"] for a in answers if a.status_code == 202]
                    assert answers[-1].status_code == 200, answers[-1].text
                    assert answers[-1].json()["version"] == version + 1  # saved once
                    version += 1
                    idled_out += await _idled_out(admin, name, await _backends(admin, name))
                runs = [await server.engine.wait_for_run(run_id, 30) for run_id in run_ids]
                async with db.read() as conn:
                    completed = (
                        await conn.execute(
                            sa.select(instance_logs.c.instance_id, instance_logs.c.node_id).where(
                                instance_logs.c.event_type == "NODE_COMPLETED"
                            )
                        )
                    ).all()
    finally:
        await admin.close()
        await db.dispose()
    assert idled_out >= 10  # the test proved something: the server closed that many pooled connections
    assert set(statuses) <= {200, 202}, statuses
    assert len(run_ids) == 20
    assert [run.status.value for run in runs] == ["COMPLETED"] * 20
    assert _completed_twice(completed) == []
    assert Counter(row[0] for row in completed) == dict.fromkeys(run_ids, 6)  # start, split, 3 branches, join...


async def test_runs_whose_connections_idle_out_between_nodes_complete_once(idle_url: str) -> None:
    db = Database(idle_url, pool_size=4)
    engine = Engine(db, make_test_registry(), lease_seconds=5.0, poll_interval=0.5)
    await engine.start()
    try:
        tenant_id = await engine.tenants.ensure("acme")
        graph = linear(3)
        for step in graph["nodes"][1:-1]:
            step["config"] = {"sleep": IDLE_MS * 1.5 / 1000}  # the pool's connections idle out while it runs
        run_ids = [await start(engine, tenant_id, graph) for _ in range(6)]
        runs = [await engine.wait_for_run(run_id, 30) for run_id in run_ids]
        outcomes = [await read_outcome(engine, run_id) for run_id in run_ids]
    finally:
        await engine.stop()
        await db.dispose()
    assert [(run.status.value, run.error) for run in runs] == [("COMPLETED", None)] * 6
    for outcome in outcomes:
        completed = Counter(r.node_id for r in outcome.rows if r.event_type == "NODE_COMPLETED")
        assert set(completed.values()) == {1} and len(completed) == 5  # start, s1..s3, end; none twice


async def test_a_commit_that_landed_but_reported_its_connection_lost_is_decided_again_correctly(
    postgres_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The ambiguous case: the COMMIT reached PostgreSQL and committed, its answer did not come back. The engine
    takes the decision again; the second finds the first's rows (idempotent log writes) and goes on."""
    commit = database_module.commit
    commits = lost_after_landing = 0

    async def lands_then_loses_every_third(tx: Any, track: WriteTrack | None) -> None:
        nonlocal commits, lost_after_landing
        await commit(tx, track)
        task = asyncio.current_task()
        if task is None or not task.get_name().startswith("flowdeck-node-"):
            return  # the test's own writes (the runs' starts) are not the engine's to take again
        commits += 1
        if lost_after_landing < 12 and commits % 3 == 0:
            lost_after_landing += 1
            raise asyncpg.ConnectionDoesNotExistError("connection was closed in the middle of operation")

    monkeypatch.setattr(database_module, "commit", lands_then_loses_every_third)
    db = Database(postgres_url, one_statement=False)  # every decision is a write transaction with a COMMIT
    # When the lost decision had leased the node's successor to this worker, the successor waits out its
    # lease (docs/engine.md "Lost connections"): a short one here.
    engine = Engine(db, make_test_registry(), lease_seconds=2.0, poll_interval=0.05)
    await engine.start()
    try:
        tenant_id = await engine.tenants.ensure(f"acme-{uuid.uuid4().hex[:6]}")
        run_ids = [await start(engine, tenant_id, diamond(3)) for _ in range(8)]
        runs = [await engine.wait_for_run(run_id, 60) for run_id in run_ids]
        outcomes = [await read_outcome(engine, run_id) for run_id in run_ids]
    finally:
        await engine.stop()
        await db.dispose()
    assert lost_after_landing > 0
    assert [(run.status.value, run.error) for run in runs] == [("COMPLETED", None)] * 8
    for outcome in outcomes:
        completed = Counter(r.node_id for r in outcome.rows if r.event_type == "NODE_COMPLETED")
        assert set(completed.values()) == {1}, completed


async def test_a_pool_of_connections_killed_at_once_costs_a_read_no_attempt(postgres_url: str) -> None:
    """Every pooled connection terminated while the event loop was busy (asyncpg has not read the FATALs yet,
    so each looks alive until a statement is sent on it): a read walks through all of them to a new one."""
    db = Database(postgres_url, pool_size=12)
    try:

        async def hold() -> None:
            async with db.read(snapshot=False) as conn:
                await conn.execute(sa.text("SELECT pg_sleep(0.05)"))

        await asyncio.gather(*(hold() for _ in range(12)))  # the pool holds 12 open connections
        assert db.engine.pool.checkedin() == 12  # type: ignore[attr-defined]
        database = make_url(postgres_url).database
        terminate = (
            "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity"
            f" WHERE datname = '{database}' AND pid <> pg_backend_pid()"
        )
        # psql, blocking the loop: asyncpg reads nothing until the read below sends its statement
        psql = ["psql", "-h", "127.0.0.1", "-U", "postgres", "-d", str(database), "-Atc"]
        killed = subprocess.run([*psql, terminate], check=True, capture_output=True, text=True).stdout.strip()
        assert int(killed) >= 12
        left = f"SELECT count(*) FROM pg_stat_activity WHERE datname = '{database}' AND pid <> pg_backend_pid()"
        while subprocess.run([*psql, left], check=True, capture_output=True, text=True).stdout.strip() != "0":
            time.sleep(0.01)
        async with db.read(snapshot=False) as conn:
            assert (await conn.execute(sa.text("SELECT 41 + 1"))).scalar_one() == 42
    finally:
        await db.dispose()
