"""PostgreSQL connections are checked out bare (storage/pg_checkout.py): SQLAlchemy's connection is made on one
only for a Core statement. Either way a connection goes back to the pool in autocommit state, also when the
task using it is cancelled mid-statement, and the next user finds it clean."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest
import sqlalchemy as sa

from flowdeck.storage.compiled import compile_statement
from flowdeck.storage.database import Database
from tests.support.waiting import until


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


SELECT_PID = compile_statement(sa.text("SELECT pg_backend_pid()"), is_sqlite=False, returns_rows=True)


async def backend_pid(db: Database) -> int:
    async with db.autocommit() as conn:  # a compiled statement: the connection stays bare
        return int((await conn.execute(SELECT_PID, {})).scalar_one())


async def test_a_bare_connection_is_kept_for_the_next_check_out_and_given_back_once_idle(postgres_url: str) -> None:
    db = Database(postgres_url, pool_size=2)
    db._spares.idle_seconds = 0.2
    try:
        first = await backend_pid(db)
        assert checked_out(db) == 1 and len(db._spares) == 1  # kept, not given back to the pool
        assert await backend_pid(db) == first  # the next check-out takes it
        await until(lambda: checked_out(db), lambda n: n == 0, timeout=5, what="the idle connection given back")
        assert len(db._spares) == 0
        assert await backend_pid(db) == first  # from the pool now: the pool's one open connection
    finally:
        await db.dispose()
    assert checked_out(db) == 0


async def test_a_check_out_waiting_for_the_pool_is_served_while_the_connection_s_last_user_keeps_busy(
    pg: Database,
) -> None:
    served: list[str] = []
    holding = asyncio.Event()
    let_go = asyncio.Event()

    async def busy_user() -> int:
        async with pg.autocommit() as conn:
            await conn.execute(SELECT_PID, {})
            holding.set()
            await let_go.wait()
        for steps in range(100):  # a statement, a little work, the next statement: as a chain of nodes runs
            if served:
                return steps
            await asyncio.sleep(0)
            await backend_pid(pg)
        return 100

    async def waiter() -> None:
        async with pg.autocommit():
            served.append("waiter")

    busy = asyncio.create_task(busy_user())
    await holding.wait()
    second = asyncio.create_task(waiter())
    await until(lambda: pg._spares.waiting, lambda n: n == 1, what="the second check-out waiting for the pool")
    let_go.set()
    steps, _ = await asyncio.wait_for(asyncio.gather(busy, second), 10)
    assert steps < 100, "the waiter got the pool's one connection only once its last user stopped using it"
