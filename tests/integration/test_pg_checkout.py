"""PostgreSQL connections are checked out bare (storage/pg_checkout.py): SQLAlchemy's connection is made on one
only for a Core statement. Either way a connection goes back to the pool in autocommit state, also when the
task using it is cancelled mid-statement, and the next user finds it clean."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest
import sqlalchemy as sa

from flowdeck.storage.database import Database


@pytest.fixture
async def pg(postgres_url: str) -> AsyncIterator[Database]:
    db = Database(postgres_url, pool_size=1)  # one connection: every check-out below reuses it
    yield db
    await db.dispose()


def checked_out(db: Database) -> int:
    return int(db.engine.pool.checkedout())  # type: ignore[attr-defined]  # QueuePool's


async def sleeping_in_postgres(db: Database) -> None:
    """Return once a backend of this database runs ``pg_sleep`` (asked on a connection of its own)."""
    probe = Database(db.url, pool_size=1)
    try:
        while True:
            async with probe.read(snapshot=False) as conn:
                query = "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()"
                found = await conn.execute(sa.text(f"{query} AND query LIKE 'SELECT pg_sleep%' AND state = 'active'"))
                if found.scalar():
                    return
            await asyncio.sleep(0.01)
    finally:
        await probe.dispose()


async def idle(db: Database) -> None:
    while checked_out(db):
        await asyncio.sleep(0.01)


async def test_a_core_statement_and_a_transaction_leave_the_connection_clean(pg: Database) -> None:
    async with pg.transaction() as conn:
        await conn.execute(sa.text("CREATE TEMPORARY TABLE IF NOT EXISTS probe (n int)"))
        await conn.execute(sa.text("INSERT INTO probe VALUES (1)"))
    async with pg.read() as conn:
        assert (await conn.execute(sa.text("SELECT count(*) FROM probe"))).scalar() == 1
    async with pg.read(snapshot=False) as conn:  # autocommit: each statement is a transaction of its own
        first = (await conn.execute(sa.text("SELECT pg_current_xact_id()::text"))).scalar()
        second = (await conn.execute(sa.text("SELECT pg_current_xact_id()::text"))).scalar()
    assert first != second
    assert checked_out(pg) == 0


async def test_a_task_cancelled_mid_statement_gives_its_connection_back(pg: Database) -> None:
    started = asyncio.Event()

    async def slow() -> None:
        async with pg.read(snapshot=False) as conn:
            started.set()
            await conn.execute(sa.text("SELECT pg_sleep(30)"))

    task = asyncio.create_task(slow())
    await started.wait()
    await asyncio.wait_for(sleeping_in_postgres(pg), 10)  # the event: PostgreSQL is running the statement
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    await asyncio.wait_for(idle(pg), 10)
    async with pg.read(snapshot=False) as conn:  # the pool's one connection, or a new one: it answers
        assert (await conn.execute(sa.text("SELECT 41 + 1"))).scalar() == 42
