"""SQL data sources on a real SQLite file and the real PostgreSQL server: binding, limits, errors."""

from __future__ import annotations

import asyncio
import sqlite3
import time
from pathlib import Path

import pytest

from flowdeck.domain.errors import NodeError
from flowdeck.queries.engine import QueryEngine
from flowdeck.queries.models import DataSource
from tests.integration.queries.support import closed_port, query, source

WRITES = {"readOnly": False}


def sqlite_source(path: Path, *, writes: bool = False, **kw: str) -> DataSource:
    return source("sql", {"url": f"sqlite:///{path}", **(WRITES if writes else {})}, **kw)


def allowed(path: Path) -> list[str]:
    """``FLOWDECK_SQLITE_DIRS`` for a file of the test: its directory."""
    return [str(path.parent)]


# -- SQLite -----------------------------------------------------------------------------------------


async def test_sqlite_binds_parameters_and_shapes_the_result(query_engine: QueryEngine, sqlite_data: Path) -> None:
    src = sqlite_source(sqlite_data)
    q = query(src, ["customer", "min"], sql="SELECT id, amount, placed, data FROM orders "
              "WHERE customer = :customer AND amount >= :min ORDER BY id")  # fmt: skip
    result = await query_engine.run(src, {}, q, {"customer": "c1", "min": 10})
    assert result["columns"] == ["id", "amount", "placed", "data"]
    assert result["rows"][0] == {"id": 7, "amount": 10.5, "placed": "2024-01-07", "data": "Bw=="}
    assert result["rowCount"] == len(result["rows"]) == 7
    assert result["truncated"] is False
    # a value is data, never SQL: the classic injection finds nothing and drops nothing
    injected = await query_engine.run(src, {}, q, {"customer": "x' OR '1'='1", "min": 0})
    assert injected["rows"] == []


async def test_sqlite_list_arguments_bind_as_an_in_list(query_engine: QueryEngine, sqlite_data: Path) -> None:
    src = sqlite_source(sqlite_data)
    q = query(src, ["ids"], sql="SELECT id FROM orders WHERE id IN :ids ORDER BY id")
    assert (await query_engine.run(src, {}, q, {"ids": [3, 1, 99]}))["rows"] == [{"id": 1}, {"id": 3}]
    assert (await query_engine.run(src, {}, q, {"ids": []}))["rows"] == []


async def test_row_limit_truncates_and_says_so(sqlite_data: Path) -> None:
    src = sqlite_source(sqlite_data)
    q = query(src, [], sql="SELECT id FROM orders ORDER BY id")
    async with QueryEngine(row_limit=10, sqlite_dirs=allowed(sqlite_data)) as engine:
        limited = await engine.run(src, {}, q, {})
        assert (limited["rowCount"], limited["truncated"], limited["rows"][-1]) == (10, True, {"id": 10})
        fewer = await engine.run(src, {}, q, {}, row_limit=3)
        assert (fewer["rowCount"], fewer["truncated"]) == (3, True)
        more = await engine.run(src, {}, q, {}, row_limit=1000)  # a caller cannot raise the engine's limit
        assert more["rowCount"] == 10
    async with QueryEngine(row_limit=25, sqlite_dirs=allowed(sqlite_data)) as engine:
        exact = await engine.run(src, {}, q, {})
        assert (exact["rowCount"], exact["truncated"]) == (25, False)


async def test_sqlite_statement_timeout_interrupts_a_runaway_query(sqlite_data: Path) -> None:
    src = sqlite_source(sqlite_data)
    q = query(src, [], sql="WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) FROM c")
    async with QueryEngine(statement_timeout=0.3, sqlite_dirs=allowed(sqlite_data)) as engine:
        began = time.monotonic()
        with pytest.raises(NodeError) as failure:
            await engine.run(src, {}, q, {})
        assert time.monotonic() - began < 2
        assert failure.value.retryable and failure.value.error_type == "QueryTimeout"
        assert "timed out" in failure.value.message
        # the connection is fine afterwards: the next statement on it is not interrupted
        ok = query(src, [], sql="SELECT count(*) AS n FROM orders")
        assert (await engine.run(src, {}, ok, {}))["rows"] == [{"n": 25}]


async def test_sql_errors_are_not_retried_and_say_what_is_wrong(query_engine: QueryEngine, sqlite_data: Path) -> None:
    src = sqlite_source(sqlite_data)
    for sql, expected in [
        ("SELEC id FROM orders", 'near "SELEC": syntax error'),
        ("SELECT * FROM nope", "no such table: nope"),
    ]:
        with pytest.raises(NodeError) as failure:
            await query_engine.run(src, {}, query(src, [], name="broken", sql=sql), {})
        assert not failure.value.retryable and failure.value.error_type == "SQLError"
        assert failure.value.message == f"saved query 'broken': SQL error: {expected}"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ({}, "missing argument 'customer' (the query declares: 'customer')"),
        ({"customer": "c1", "limit": 3}, "unknown argument 'limit' (the query declares: 'customer')"),
        ({"customer": {"a": [1]}, "x": 1}, "unknown argument 'x'"),
        ({"customer": [[1]]}, "argument 'customer' is a list (bound as an IN list) of non-plain values"),
        ("c1", "args must be an object"),
    ],
)
async def test_argument_problems_are_not_retried(
    query_engine: QueryEngine, sqlite_data: Path, args: object, message: str
) -> None:
    src = sqlite_source(sqlite_data)
    q = query(src, ["customer"], sql="SELECT id FROM orders WHERE customer = :customer")
    with pytest.raises(NodeError) as failure:
        await query_engine.run(src, {}, q, args)
    assert not failure.value.retryable and failure.value.error_type == "ArgumentError"
    assert message in failure.value.message


async def test_writes_commit_and_report_affected_rows(query_engine: QueryEngine, sqlite_data: Path) -> None:
    src = sqlite_source(sqlite_data, writes=True)
    update = query(src, ["c"], sql="UPDATE orders SET amount = 0 WHERE customer = :c")
    assert await query_engine.run(src, {}, update, {"c": "c0"}) == {
        "rows": [],
        "rowCount": 8,
        "columns": [],
        "truncated": False,
    }
    insert = query(src, ["id"], sql="INSERT INTO orders (id, customer) VALUES (:id, 'new') RETURNING id, customer")
    assert (await query_engine.run(src, {}, insert, {"id": 100}))["rows"] == [{"id": 100, "customer": "new"}]
    with sqlite3.connect(sqlite_data) as conn:
        assert conn.execute("SELECT count(*) FROM orders WHERE amount = 0 OR id = 100").fetchone() == (9,)
    conn.close()


async def test_sqlite_queries_cannot_reach_other_files(
    query_engine: QueryEngine, sqlite_data: Path, tmp_path: Path
) -> None:
    src = sqlite_source(sqlite_data)
    for sql in (f"ATTACH DATABASE '{tmp_path / 'other.db'}' AS other", f"VACUUM INTO '{tmp_path / 'other.db'}'"):
        with pytest.raises(NodeError) as failure:
            await query_engine.run(src, {}, query(src, [], sql=sql), {})
        assert not failure.value.retryable and "ATTACH, DETACH and extensions are not allowed" in failure.value.message
        assert not (tmp_path / "other.db").exists()


async def test_engines_are_cached_per_source_and_replaced_when_it_changes(
    query_engine: QueryEngine, sqlite_data: Path
) -> None:
    src = sqlite_source(sqlite_data)
    q = query(src, [], sql="SELECT 1 AS one")
    await query_engine.run(src, {}, q, {})
    first = query_engine.sql._engines[src.id][1]
    await query_engine.run(src, {}, q, {})
    assert query_engine.sql._engines[src.id][1] is first
    changed = DataSource(src.id, src.tenant_id, src.name, "sql", src.config, (), src.created_at, src.updated_at + 1)
    await query_engine.run(changed, {}, q, {})
    assert query_engine.sql._engines[src.id][1] is not first
    await query_engine.forget(src.id)
    assert src.id not in query_engine.sql._engines


# -- PostgreSQL -------------------------------------------------------------------------------------


def pg_source(url: str, **kw: str) -> DataSource:
    return source("sql", {"url": url}, **kw)


async def test_postgres_values_come_back_as_json(query_engine: QueryEngine, pg_schema: tuple[str, str]) -> None:
    url, schema = pg_schema
    src = pg_source(url)
    q = query(
        src,
        ["id"],
        sql=f'SELECT id, customer, amount, placed, payload, raw, ref, id AS "id" FROM {schema}.orders WHERE id = :id',
    )
    result = await query_engine.run(src, {"password": "unused-with-trust-auth"}, q, {"id": 4})
    assert result["columns"] == ["id", "customer", "amount", "placed", "payload", "raw", "ref", "id_2"]
    assert result["rows"] == [
        {"id": 4, "customer": "c1", "amount": "5.00", "placed": "2024-01-05T00:00:00+00:00", "payload": {"i": 4},
         "raw": "AQI=", "ref": "00000000-0000-0000-0000-000000000004", "id_2": 4}
    ]  # fmt: skip


async def test_postgres_row_limit_streams_and_truncates(pg_schema: tuple[str, str]) -> None:
    url, schema = pg_schema
    src = pg_source(url)
    async with QueryEngine(row_limit=5) as engine:
        result = await engine.run(src, {}, query(src, [], sql=f"SELECT id FROM {schema}.orders ORDER BY id"), {})
        assert (result["rowCount"], result["truncated"]) == (5, True)
        many = query(src, [], sql="SELECT i FROM generate_series(1, 1000000) AS i")
        assert (await engine.run(src, {}, many, {}))["rowCount"] == 5


async def test_postgres_statement_timeout(pg_schema: tuple[str, str]) -> None:
    src = pg_source(pg_schema[0])
    async with QueryEngine(statement_timeout=0.3) as engine:
        began = time.monotonic()
        with pytest.raises(NodeError) as failure:
            await engine.run(src, {}, query(src, [], name="sleepy", sql="SELECT pg_sleep(5)"), {})
        assert time.monotonic() - began < 2
        assert failure.value.retryable and failure.value.error_type == "QueryTimeout"
        assert failure.value.message.startswith("saved query 'sleepy': the statement timed out")
        assert (await engine.run(src, {}, query(src, [], sql="SELECT 1 AS one"), {}))["rows"] == [{"one": 1}]


async def test_postgres_sql_and_argument_errors_are_not_retried(
    query_engine: QueryEngine, pg_schema: tuple[str, str]
) -> None:
    url, schema = pg_schema
    src = pg_source(url)
    cases = [
        (query(src, [], name="typo", sql="SELEC 1"), {},
         "saved query 'typo': SQL error: syntax error at or near \"SELEC\""),
        (query(src, [], name="gone", sql=f"SELECT * FROM {schema}.nope"), {},
         f'relation "{schema}.nope" does not exist'),
        (query(src, ["id"], name="typed", sql=f"SELECT * FROM {schema}.orders WHERE id = :id"), {"id": "abc"},
         "saved query 'typed': invalid input for argument 'id'"),
    ]  # fmt: skip
    for q, args, expected in cases:
        with pytest.raises(NodeError) as failure:
            await query_engine.run(src, {}, q, args)
        assert not failure.value.retryable, failure.value.message
        assert expected in failure.value.message


async def test_connection_failures_are_retryable_and_never_show_the_password(query_engine: QueryEngine) -> None:
    src = pg_source(f"postgresql+asyncpg://flowdeck@127.0.0.1:{closed_port()}/nothing", name="warehouse")
    with pytest.raises(NodeError) as failure:
        await query_engine.run(src, {"password": "hunter2-secret"}, query(src, [], sql="SELECT 1"), {})
    assert failure.value.retryable and failure.value.error_type == "ConnectionError"
    assert failure.value.message.startswith("cannot connect to data source 'warehouse'")
    assert "hunter2" not in failure.value.message


async def test_a_login_the_server_refuses_is_a_config_error(query_engine: QueryEngine, postgres_url: str) -> None:
    url = postgres_url.replace("postgres@", "no_such_role_here@")
    src = pg_source(url, name="wrong login")
    with pytest.raises(NodeError) as failure:
        await query_engine.run(src, {}, query(src, [], sql="SELECT 1"), {})
    assert not failure.value.retryable and failure.value.error_type == "ConfigError"
    assert 'role "no_such_role_here" does not exist' in failure.value.message


async def test_a_cancelled_query_leaves_the_engine_usable(
    query_engine: QueryEngine, sqlite_data: Path, pg_schema: tuple[str, str]
) -> None:
    """The node's own timeout cancels the handler mid-statement; the next run must still work."""
    runaway = "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) FROM c"
    for src, sql in [
        (sqlite_source(sqlite_data), runaway),
        (pg_source(pg_schema[0], source_id="pg"), "SELECT pg_sleep(5)"),
    ]:
        began = time.monotonic()
        with pytest.raises(TimeoutError):
            async with asyncio.timeout(0.3):
                await query_engine.run(src, {}, query(src, [], sql=sql), {})
        assert (await query_engine.run(src, {}, query(src, [], sql="SELECT 2 AS two"), {}))["rows"] == [{"two": 2}]
        assert time.monotonic() - began < 3


async def test_postgres_writes_and_in_lists(query_engine: QueryEngine, pg_schema: tuple[str, str]) -> None:
    url, schema = pg_schema
    src = source("sql", {"url": url, **WRITES})
    update = query(src, ["ids"], sql=f"UPDATE {schema}.orders SET customer = 'vip' WHERE id IN :ids")
    assert (await query_engine.run(src, {}, update, {"ids": [1, 2, 3]}))["rowCount"] == 3
    count = query(src, ["c"], sql=f"SELECT count(*) AS n FROM {schema}.orders WHERE customer = :c")
    assert (await query_engine.run(src, {}, count, {"c": "vip"}))["rows"] == [{"n": 3}]
    dup = query(src, ["id"], name="dup", sql=f"INSERT INTO {schema}.orders (id) VALUES (:id)")
    with pytest.raises(NodeError) as failure:
        await query_engine.run(src, {}, dup, {"id": 1})
    assert not failure.value.retryable and "constraint violated: duplicate key value" in failure.value.message
