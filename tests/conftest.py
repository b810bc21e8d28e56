"""Fixtures: a fresh database per test, on SQLite and on PostgreSQL.

PostgreSQL tests run against ``FLOWDECK_TEST_POSTGRES_URL`` (default: the local server's ``test``
database), in a database created for this test session and dropped after it. Locally they are
skipped when no server answers; under ``CI=true`` an unreachable server is an error, never a skip.
"""

from __future__ import annotations

import asyncio
import os
import time
import uuid
from collections.abc import AsyncIterator, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

import pytest
import sqlalchemy as sa
from sqlalchemy.engine import make_url

from flowdeck.engine.engine import Engine
from flowdeck.storage.database import Database
from flowdeck.storage.schema import metadata
from tests.support.handlers import make_test_registry

REDIS_URL = os.environ.get("FLOWDECK_TEST_REDIS_URL", "redis://127.0.0.1:6379/0")
POSTGRES_URL = os.environ.get("FLOWDECK_TEST_POSTGRES_URL", "postgresql+asyncpg://postgres@127.0.0.1:5432/test")


async def _admin_execute(url: str, statement: str) -> None:
    import asyncpg

    u = make_url(url)
    conn = await asyncpg.connect(
        host=u.host, port=u.port or 5432, user=u.username, password=u.password, database=u.database
    )
    try:
        await conn.execute(statement)
    finally:
        await conn.close()


@contextmanager
def scratch_database(prefix: str, *, settings: Mapping[str, str] | None = None, schema: bool = True) -> Iterator[str]:
    """A PostgreSQL database of its own, dropped afterwards: ``settings`` are its ``ALTER DATABASE … SET``
    values; ``schema`` creates every table (else it is empty, for Alembic)."""
    name = f"{prefix}_{uuid.uuid4().hex[:10]}"
    asyncio.run(_admin_execute(POSTGRES_URL, f'CREATE DATABASE "{name}"'))
    try:
        for key, value in (settings or {}).items():
            asyncio.run(_admin_execute(POSTGRES_URL, f"ALTER DATABASE \"{name}\" SET {key} = '{value}'"))
        url = make_url(POSTGRES_URL).set(database=name).render_as_string(hide_password=False)
        if schema:
            asyncio.run(_create_schema(url))
        yield url
    finally:
        asyncio.run(_admin_execute(POSTGRES_URL, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))


async def _create_schema(url: str) -> None:
    db = Database(url)
    await db.create_all()
    await db.dispose()


@pytest.fixture(scope="session")
def postgres_url() -> Iterator[str]:
    try:
        asyncio.run(_admin_execute(POSTGRES_URL, "SELECT 1"))
    except (OSError, Exception) as exc:
        if os.environ.get("CI") == "true":
            pytest.fail(f"PostgreSQL is required in CI but unreachable at {POSTGRES_URL}: {exc}")
        pytest.skip(f"no PostgreSQL at {POSTGRES_URL}: {exc}")
    with scratch_database("flowdeck_test") as url:
        yield url


@pytest.fixture(scope="session")
def equivalence_url(postgres_url: str) -> Iterator[str]:
    """A PostgreSQL database for the equivalence driver alone (tests/support/equivalence.py): its claims take
    every queued job, so a job another test left queued in ``postgres_url`` would be one more step."""
    with scratch_database("flowdeck_equivalence") as url:
        yield url


@pytest.fixture(params=["sqlite", "postgres"])
def database_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite+aiosqlite:///{tmp_path / 'flowdeck.db'}"
    return str(request.getfixturevalue("postgres_url"))


@pytest.fixture
async def db(database_url: str) -> AsyncIterator[Database]:
    database = Database(database_url)
    if database.is_sqlite:
        await database.create_all()
    else:
        async with database.transaction() as conn:
            names = ", ".join(f'"{t.name}"' for t in reversed(metadata.sorted_tables))
            await conn.execute(sa.text(f"TRUNCATE {names} RESTART IDENTITY CASCADE"))
    yield database
    if not database.is_sqlite:
        await _pool_idle(database)
    await database.dispose()


async def _pool_idle(database: Database, timeout: float = 5.0) -> None:
    """Wait until no pooled connection is checked out: work a test's engine still does after the test (the
    child cascade of a run a sweep just failed, in a test that never stops its engine) gives its connection
    back before the pool closes; closing under it left an unclosed connection for a later test's GC."""
    deadline = time.monotonic() + timeout
    while database.engine.pool.checkedout() and time.monotonic() < deadline:
        await asyncio.sleep(0.01)


@pytest.fixture
async def engine(db: Database) -> AsyncIterator[Engine]:
    eng = Engine(db, make_test_registry(), lease_seconds=2.0, poll_interval=0.05)
    await eng.start()
    yield eng
    await eng.stop()


@pytest.fixture
async def tenant_id(engine: Engine) -> str:
    return await engine.tenants.ensure("acme")


@pytest.fixture
async def redis_url() -> str:
    """A Redis server for the fan-out tests; skipped locally without one, an error under ``CI=true``."""
    import redis.asyncio as redis

    client = redis.from_url(REDIS_URL)
    try:
        await client.ping()
    except (OSError, redis.RedisError) as exc:
        if os.environ.get("CI") == "true":
            pytest.fail(f"Redis is required in CI but unreachable at {REDIS_URL}: {exc}")
        pytest.skip(f"no Redis at {REDIS_URL}: {exc}")
    finally:
        await client.aclose()
    return REDIS_URL
