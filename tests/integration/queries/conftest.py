"""Real things for the query tests: an HTTP server on 127.0.0.1, a SQLite file, a PostgreSQL schema."""

from __future__ import annotations

import sqlite3
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa
from sqlalchemy.ext.asyncio import create_async_engine

from flowdeck.queries.engine import QueryEngine
from tests.integration.queries.support import http_server


@pytest.fixture(scope="session")
def http_base() -> Iterator[str]:
    with http_server() as base:
        yield base


LOCAL = ("127.0.0.1",)
"""``FLOWDECK_HTTP_ALLOW`` of these tests: their HTTP server listens on 127.0.0.1."""


@pytest.fixture
async def query_engine(tmp_path: Path) -> AsyncIterator[QueryEngine]:
    """The engine as an operator would set it up for these tests: SQLite files in ``tmp_path``, HTTP to 127.0.0.1."""
    async with QueryEngine(sqlite_dirs=[str(tmp_path)], http_allow=LOCAL) as engine:
        yield engine


@pytest.fixture
def sqlite_data(tmp_path: Path) -> Path:
    """A SQLite file with ``orders(id, customer, amount, placed, data)``: 25 rows."""
    path = tmp_path / "shop.db"
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE orders (id INTEGER PRIMARY KEY, customer TEXT, amount REAL, placed TEXT, data BLOB)")
        conn.executemany(
            "INSERT INTO orders VALUES (?, ?, ?, ?, ?)",
            [(i, f"c{i % 3}", i * 1.5, f"2024-01-{i:02d}", bytes([i])) for i in range(1, 26)],
        )
    conn.close()
    return path


@pytest.fixture
async def pg_schema(postgres_url: str) -> AsyncIterator[tuple[str, str]]:
    """A fresh schema ``ds_<hex>`` with ``orders`` in the test PostgreSQL database: ``(url, schema)``."""
    schema = f"ds_{uuid.uuid4().hex[:10]}"
    engine = create_async_engine(postgres_url)
    async with engine.begin() as conn:
        await conn.execute(sa.text(f"CREATE SCHEMA {schema}"))
        await conn.execute(
            sa.text(
                f"CREATE TABLE {schema}.orders (id int PRIMARY KEY, customer text, amount numeric(10, 2), "
                "placed timestamptz, payload jsonb, raw bytea, ref uuid)"
            )
        )
        await conn.execute(
            sa.text(
                f"INSERT INTO {schema}.orders SELECT i, 'c' || (i % 3), i * 1.25, "
                "timestamptz '2024-01-01 00:00:00+00' + i * interval '1 day', jsonb_build_object('i', i), "
                "decode('0102', 'hex'), ('00000000-0000-0000-0000-00000000000' || (i % 10))::uuid "
                "FROM generate_series(1, 25) AS i"
            )
        )
    try:
        yield postgres_url, schema
    finally:
        async with engine.begin() as conn:
            await conn.execute(sa.text(f"DROP SCHEMA {schema} CASCADE"))
        await engine.dispose()
