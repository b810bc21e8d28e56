"""Connections that fit: ``serve`` and ``flowdeck worker`` processes hold what docs/operations.md "How many
connections" promises (counted in ``pg_stat_activity`` by ``application_name``), and a connection PostgreSQL
refuses ("too many connections") costs a node a short wait, never its lease.

PostgreSQL only.
"""

from __future__ import annotations

import asyncio
import logging
import os
import uuid
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import asyncpg  # type: ignore[import-untyped]
import httpx
import pytest
from sqlalchemy.engine import make_url

from flowdeck.accounts.passwords import PasswordService
from flowdeck.accounts.rate_limit import LoginRateLimiter
from flowdeck.accounts.service import AccountsService
from flowdeck.engine.engine import Engine
from flowdeck.settings import Settings
from flowdeck.storage.database import Database
from tests.conftest import POSTGRES_URL, _admin_execute
from tests.support.flowdeck_processes import FlowdeckProcess, free_port
from tests.support.graphs import definition, edge, end, linear, node
from tests.support.handlers import make_test_registry
from tests.support.runs import start

ROLE_LIMIT = 2


@pytest.fixture
def limited_url(postgres_url: str) -> Iterator[str]:
    """A database of its own, owned by a role PostgreSQL lets hold ``ROLE_LIMIT`` connections at once."""
    name = f"flowdeck_limit_{uuid.uuid4().hex[:10]}"
    statements = [
        f'CREATE ROLE "{name}" LOGIN CONNECTION LIMIT {ROLE_LIMIT}',
        f'CREATE DATABASE "{name}" OWNER "{name}"',
    ]
    for statement in statements:
        asyncio.run(_admin_execute(POSTGRES_URL, statement))
    url = make_url(POSTGRES_URL).set(database=name, username=name).render_as_string(hide_password=False)

    async def create_schema() -> None:
        db = Database(url, pool_size=1)
        await db.create_all()
        await db.dispose()

    try:
        asyncio.run(create_schema())
        yield url
    finally:
        asyncio.run(_admin_execute(POSTGRES_URL, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        asyncio.run(_admin_execute(POSTGRES_URL, f'DROP ROLE IF EXISTS "{name}"'))


async def test_a_refused_connection_costs_a_node_a_short_wait_not_its_lease(
    limited_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    """Twelve runs decide side by side on a pool of twelve, where PostgreSQL takes two connections: the
    other connections are refused ("too many connections for role"), and each waits for one given back.
    Every run completes well before the 60 s lease would have brought a refused node back (before, a refused
    decision left its node leased until then)."""
    db = Database(limited_url, pool_size=12, reconnect_seconds=30)
    engine = Engine(db, make_test_registry(), concurrency=12, lease_seconds=60.0, poll_interval=0.05)
    try:
        tenant_id = await engine.tenants.ensure("acme")
        graph = linear(2)
        for step in graph["nodes"][1:-1]:
            step["config"] = {"sleep": 0.1}  # the runs' nodes run side by side, then decide at about once
        run_ids = [await start(engine, tenant_id, graph) for _ in range(12)]  # queued before the worker starts
        with caplog.at_level(logging.WARNING, logger="flowdeck.storage.database"):
            await engine.start()  # claims the twelve start nodes at once
            runs = [await engine.wait_for_run(run_id, 20) for run_id in run_ids]  # a third of the lease
    finally:
        await engine.stop()
        await db.dispose()
    assert [(run.status.value, run.error) for run in runs] == [("COMPLETED", None)] * 12
    refusals = [r for r in caplog.records if "too many connections" in r.getMessage()]
    assert refusals, "PostgreSQL never refused a connection: the test proved nothing"


async def _token(url: str) -> str:
    db = Database(url, pool_size=1)
    try:
        accounts = AccountsService(db, PasswordService(), LoginRateLimiter(db))
        unique = uuid.uuid4().hex[:10]
        email = f"ops-{unique}@example.com"
        await accounts.create_user(email, f"tenant-{unique}", None)
        _, token = await accounts.create_token_for_email(email, "connections")
        return token
    finally:
        await db.dispose()


def _fan_out(width: int) -> dict[str, Any]:
    """start -> width ``set`` nodes side by side -> a join -> end: work for every worker's pool at once."""
    branches = [node(f"b{i}", "set", config={"fields": [{"name": "i", "value": i}]}) for i in range(width)]
    return definition(
        [node("start", "start"), *branches, node("join", "set", joinMode="all"), end()],
        [edge("start", b["id"]) for b in branches] + [edge(b["id"], "join") for b in branches] + [edge("join", "end")],
    )


WORKERS = 4


@pytest.fixture
def serve_and_workers(postgres_url: str, tmp_path: Path) -> Iterator[str]:
    """``flowdeck serve --workers 0`` and ``WORKERS`` ``flowdeck worker`` processes, with no connection setting:
    the defaults are what is measured. Stopped by their PIDs at the end."""
    env = {**os.environ, "FLOWDECK_DATABASE_URL": postgres_url, "FLOWDECK_SANDBOX_WORKERS": "1"}
    for name in ("FLOWDECK_REDIS_URL", "FLOWDECK_DB_POOL_SIZE", "FLOWDECK_WORKER_DB_POOL_SIZE"):
        env.pop(name, None)
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    serve_args = ["serve", "--workers", "0", "--host", "127.0.0.1", "--port", str(port)]
    started = [FlowdeckProcess("serve", serve_args, env, tmp_path / "serve.log", health_url=f"{url}/api/health")]
    started += [
        FlowdeckProcess(f"worker-{index}", ["worker"], env, tmp_path / f"worker-{index}.log")
        for index in range(WORKERS)
    ]
    try:
        for process in started:
            process.start()
        for process in started:
            process.wait_ready()
        yield url
    finally:
        for process in started:
            process.terminate(30)


async def _connections(admin: asyncpg.Connection, database: str) -> Counter[str]:
    rows = await admin.fetch(
        "SELECT application_name FROM pg_stat_activity WHERE datname = $1 AND application_name LIKE 'flowdeck-%'",
        database,
    )
    return Counter(row["application_name"] for row in rows)


async def test_serve_and_workers_hold_the_connections_the_docs_promise(
    serve_and_workers: str, postgres_url: str
) -> None:
    defaults = Settings()
    serve_most = defaults.db_pool_size + 2  # its pool, a LISTEN and a NOTIFY connection
    worker_most = defaults.worker_db_pool_size + 2
    assert serve_most + 8 * worker_most <= 80  # serve and 8 workers leave 20 of PostgreSQL's default 100
    token = await _token(postgres_url)
    u = make_url(postgres_url)
    admin = await asyncpg.connect(host=u.host, port=u.port or 5432, user=u.username, database=u.database)
    peak: Counter[str] = Counter()
    done = asyncio.Event()

    async def sample() -> None:
        while not done.is_set():
            for role, count in (await _connections(admin, str(u.database))).items():
                peak[role] = max(peak[role], count)
            await asyncio.sleep(0.02)

    sampler = asyncio.create_task(sample())
    headers = {"Authorization": f"Bearer {token}"}
    try:
        async with httpx.AsyncClient(base_url=serve_and_workers, headers=headers, timeout=30) as client:
            created = await client.post("/api/workflows", json=_fan_out(12))
            assert created.status_code == 201, created.text
            workflow_id = created.json()["id"]

            async def run_and_read() -> str:
                started = await client.post(f"/api/workflows/{workflow_id}/runs")
                assert started.status_code == 202, started.text
                run_id = str(started.json()["instanceId"])
                async with asyncio.timeout(120):
                    while True:  # reads beside the runs: serve's HTTP side uses its pool too
                        read = await client.get(f"/api/runs/{run_id}")
                        assert read.status_code == 200, read.text
                        if read.json()["status"] in ("COMPLETED", "FAILED", "CANCELLED"):
                            return str(read.json()["status"])
                        await asyncio.sleep(0.05)

            statuses = await asyncio.gather(*(run_and_read() for _ in range(40)))
    finally:
        done.set()
        await sampler
        await admin.close()
    print(f"peak connections by application_name, serve and {WORKERS} workers: {dict(peak)}")
    assert statuses == ["COMPLETED"] * 40
    assert peak["flowdeck-serve"] >= 3 and peak["flowdeck-worker"] >= WORKERS * 3  # every role was seen at work
    assert peak["flowdeck-serve"] <= serve_most, peak
    assert peak["flowdeck-worker"] <= WORKERS * worker_most, peak
