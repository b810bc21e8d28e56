"""The PostgreSQL fan-out outlives its connections: after PostgreSQL closed them (``pg_terminate_backend``,
a restart), the listening connection is opened again and LISTENs again (and says that messages sent
meanwhile were missed, so clients read their runs again), the sending one is opened again, and another
process's subscribers still receive the node updates. Under ``CI=true`` PostgreSQL is required.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import asyncpg  # type: ignore[import-untyped]
import pytest
from sqlalchemy.engine import make_url

from flowdeck.domain.statuses import RunStatus
from flowdeck.engine.engine import Engine
from flowdeck.engine.fanout import SHARED, Fanout
from flowdeck.engine.pg_notify import PostgresTransport
from flowdeck.engine.publisher import NodeUpdate, RunUpdate, Update
from flowdeck.storage.database import Database
from tests.support.graphs import linear
from tests.support.handlers import make_test_registry
from tests.support.runs import start
from tests.support.waiting import until


@pytest.fixture
async def admin(postgres_url: str) -> AsyncIterator[asyncpg.Connection]:
    u = make_url(postgres_url)
    conn = await asyncpg.connect(host=u.host, port=u.port or 5432, user=u.username, database=u.database)
    yield conn
    await conn.close()


@pytest.fixture
async def sqlite_db(tmp_path: Path) -> AsyncIterator[Database]:
    db = Database(f"sqlite+aiosqlite:///{tmp_path / 'fanout.db'}")
    await db.create_all()
    yield db
    await db.dispose()


async def listeners(admin: asyncpg.Connection, channel: str) -> set[int]:
    """The backends LISTENing on the channel's shared topic (their last statement was that LISTEN)."""
    rows = await admin.fetch(
        "SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND query = $1",
        f'LISTEN "{channel}_{SHARED}"',
    )
    return {row["pid"] for row in rows}


async def run_seen(subscription: object, instance_id: str) -> list[Update]:
    seen: list[Update] = []
    while not (seen and isinstance(seen[-1], RunUpdate) and seen[-1].status is RunStatus.COMPLETED):
        update = await asyncio.wait_for(subscription.get(), timeout=10)  # type: ignore[attr-defined]
        if update.instance_id == instance_id:
            seen.append(update)
    return seen


async def test_updates_still_arrive_after_the_fanout_connections_were_terminated(
    postgres_url: str, admin: asyncpg.Connection, sqlite_db: Database
) -> None:
    channel = f"flowdeck_test_{uuid.uuid4().hex[:12]}"
    worker = Engine(sqlite_db, make_test_registry(), poll_interval=0.05)  # "flowdeck worker"
    serve = Engine(sqlite_db, make_test_registry())  # "flowdeck serve": runs nothing, has the clients
    fanouts = [
        Fanout(PostgresTransport(postgres_url, channel=channel), worker.publisher),
        Fanout(PostgresTransport(postgres_url, channel=channel), serve.publisher),
    ]
    for fanout in fanouts:
        await fanout.start()
    await serve.publisher.watches.watch(None)  # a client of serve watches every run
    gaps: list[int] = []
    serve.publisher.on_gap(lambda: gaps.append(1))
    await worker.start()
    try:
        tenant_id = await worker.tenants.ensure("acme")
        with serve.publisher.subscribe() as watched:
            before = await listeners(admin, channel)
            assert len(before) == 2
            for _ in range(3):  # each round: every connection of both processes' fan-outs is closed
                gaps_before = len(gaps)
                killed = await admin.fetchval(
                    "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity"
                    " WHERE datname = current_database() AND pid <> pg_backend_pid()"
                )
                assert killed >= 2  # the two listening (and the sending ones, once opened)
                # The event that proves both listened again: two new backends LISTEN on the channel.
                async with asyncio.timeout(10):
                    while len(now := await listeners(admin, channel)) < 2 or now & before:
                        await asyncio.sleep(0.02)
                before = now
                await until(
                    lambda: len(gaps), lambda n, floor=gaps_before: n > floor, what="serve told it may have missed some"
                )
                instance_id = await start(worker, tenant_id, linear(2))
                seen = await run_seen(watched, instance_id)
                nodes = [(u.node_id, u.status.value) for u in seen if isinstance(u, NodeUpdate)]
                assert ("s1", "COMPLETED") in nodes and ("s2", "COMPLETED") in nodes
    finally:
        await worker.stop()
        for fanout in fanouts:
            await fanout.stop()


async def test_a_message_sent_as_its_connection_is_terminated_is_sent_on_a_new_one(
    postgres_url: str, admin: asyncpg.Connection, sqlite_db: Database
) -> None:
    channel = f"flowdeck_test_{uuid.uuid4().hex[:12]}"
    worker = Engine(sqlite_db, make_test_registry(), poll_interval=0.05)
    serve = Engine(sqlite_db, make_test_registry())
    fanouts = [
        Fanout(PostgresTransport(postgres_url, channel=channel), worker.publisher),
        Fanout(PostgresTransport(postgres_url, channel=channel), serve.publisher),
    ]
    for fanout in fanouts:
        await fanout.start()
    await serve.publisher.watches.watch(None)  # a client of serve watches every run
    await worker.start()
    try:
        tenant_id = await worker.tenants.ensure("acme")
        with serve.publisher.subscribe() as watched:
            for _ in range(5):
                await run_seen(watched, await start(worker, tenant_id, linear(1)))  # the senders are open
                senders = await admin.fetchval(
                    "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity"
                    " WHERE datname = current_database() AND query LIKE 'SELECT pg_notify%'"
                )
                assert senders >= 1
                # At once: the worker's sender learns it was closed only when it sends.
                seen = await run_seen(watched, await start(worker, tenant_id, linear(2)))
                nodes = [(u.node_id, u.status.value) for u in seen if isinstance(u, NodeUpdate)]
                assert ("s1", "COMPLETED") in nodes and ("s2", "COMPLETED") in nodes
    finally:
        await worker.stop()
        for fanout in fanouts:
            await fanout.stop()
