"""The SQL runner: one SQLAlchemy async engine per data source, a statement timeout, a row limit.

Engines are cached per data source and rebuilt when the source changes (``updated_at``); the old one
is disposed. Every run is one transaction, read-only unless the data source sets ``readOnly: false``
(PostgreSQL: ``SET TRANSACTION READ ONLY`` first; SQLite: the file is opened ``mode=ro`` with
``query_only``; other databases are refused in read-only mode, since nothing would enforce it); a
writing source commits when the statement succeeds. Timeouts: PostgreSQL gets ``statement_timeout``
for the transaction (``set_config(..., true)`` is ``SET LOCAL`` with a bound value); SQLite gets a
progress handler that interrupts the statement at its deadline; every dialect also runs under
``asyncio.timeout`` as a backstop.
A statement that starts with SELECT / WITH / VALUES / TABLE / SHOW / EXPLAIN / PRAGMA is streamed
and read up to ``row_limit + 1`` rows, so a huge result is never loaded; any other statement is run
buffered, so ``rowCount`` is the number of rows it changed (``INSERT ... RETURNING`` gives its rows).
``truncated`` says whether rows were left out. If the caller is cancelled (the node's own timeout, a
cancelled run) the statement is interrupted before the connection is given up.

Where a source may point is ``sql_guard``'s call: SQLite files only inside ``FLOWDECK_SQLITE_DIRS``
and never Flowdeck's own, opened by Flowdeck from a plain path; a PostgreSQL connection that turns out
to reach Flowdeck's own database is refused (checked on every new connection). ATTACH / DETACH are
denied by an authorizer, so a SQLite query cannot reach other files. ``probe`` opens a fresh engine
through the same path and runs ``SELECT 1`` (the "test connection" of the API).
"""

from __future__ import annotations

import asyncio
import math
import re
import sqlite3
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, cast

import aiosqlite
import sqlalchemy as sa
from sqlalchemy import event
from sqlalchemy.engine import URL, make_url
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine, create_async_engine
from sqlalchemy.pool import NullPool

from flowdeck.domain.errors import NodeError
from flowdeck.queries.models import DataSource, SavedQuery
from flowdeck.queries.sql_guard import (
    PostgresIdentity,
    SourceRefusedError,
    SqlitePolicy,
    postgres_identity,
    sqlite_uri,
)
from flowdeck.queries.sqlerrors import classify_sql_error
from flowdeck.queries.validation import async_sql_url, is_read_only
from flowdeck.queries.values import json_safe

__all__ = ("SqlRunner",)

_ROWS_FIRST: Final = re.compile(
    r"^\s*(?:(?:--[^\n]*(?:\n|$)|/\*.*?\*/)\s*)*\(?\s*(?:select|with|values|table|show|explain|pragma)\b",
    re.IGNORECASE | re.DOTALL,
)
_DEADLINE_KEY: Final = "flowdeck_query_deadline"
_DENIED_ACTIONS: Final = frozenset({sqlite3.SQLITE_ATTACH, sqlite3.SQLITE_DETACH})


def _authorize(action: int, *_: Any) -> int:
    return sqlite3.SQLITE_DENY if action in _DENIED_ACTIONS else sqlite3.SQLITE_OK


def _unique(names: Sequence[str]) -> list[str]:
    seen: dict[str, int] = {}
    out = []
    for name in names:
        seen[name] = seen.get(name, 0) + 1
        out.append(name if seen[name] == 1 else f"{name}_{seen[name]}")
    return out


def _no_rows(rowcount: int) -> dict[str, Any]:
    return {"rows": [], "rowCount": max(rowcount, 0), "columns": [], "truncated": False}


def _shape(columns: Sequence[str], rows: Sequence[Sequence[Any]], row_limit: int) -> dict[str, Any]:
    names = _unique(columns)
    kept = rows[:row_limit]
    out = [dict(zip(names, (json_safe(v) for v in row), strict=True)) for row in kept]
    return {"rows": out, "rowCount": len(out), "columns": names, "truncated": len(rows) > row_limit}


def _positions(statement: sa.TextClause, engine: AsyncEngine) -> Sequence[str]:
    """Parameter names in positional order (``$1`` is the first), to name them in driver errors."""
    try:
        return getattr(statement.compile(dialect=engine.dialect), "positiontup", None) or ()
    except sa.exc.SQLAlchemyError:
        return ()


@dataclass(slots=True)
class _Attempt:
    connecting: bool = True
    read_only: bool = True
    deadline: list[float] | None = None  # the SQLite progress handler's deadline, shared with its thread


async def _unless_cancelled(session: asyncio.Future[dict[str, Any]], state: _Attempt) -> dict[str, Any]:
    """Await the session; if *we* are cancelled (node timeout, cancelled run), stop its statement first.

    SQLAlchemy answers a cancellation by closing the connection, which for aiosqlite waits behind the
    running statement; interrupting the statement before cancelling the session keeps that short.
    """
    try:
        return await asyncio.shield(session)
    except asyncio.CancelledError:
        if state.deadline is not None:
            state.deadline[0] = -math.inf
        session.cancel()
        await asyncio.wait({session})
        if not session.cancelled():
            session.exception()  # retrieved: it ends with the interrupted statement's error, nobody's concern
        raise


def _sqlite_opener(path: str, read_only: bool) -> Any:
    """Opens the checked file with Flowdeck's own URI (``mode=ro`` / ``rw``: never creates it)."""

    async def connect() -> aiosqlite.Connection:
        conn = await aiosqlite.connect(sqlite_uri(path, read_only=read_only), uri=True, timeout=5)
        if read_only:
            await conn.execute("PRAGMA query_only = ON")
        return conn

    return connect


def _refuse_own_database(engine: AsyncEngine, source: DataSource, own: PostgresIdentity) -> None:
    """Check every new connection of ``engine``: never Flowdeck's own database, nor its server as a superuser."""

    @event.listens_for(engine.sync_engine, "connect")
    def check(dbapi_connection: Any, _record: Any) -> None:
        reason = dbapi_connection.run_async(postgres_identity).refusal(own)
        if reason is not None:
            dbapi_connection.run_async(lambda conn: conn.close())
            raise _refused(source, SourceRefusedError(reason))


_READ_ONLY_HINTS: Final = ("read-only transaction", "readonly database", "query_only")


def _explain_read_only(failure: NodeError, read_only: bool) -> NodeError:
    if not read_only or not any(hint in failure.message for hint in _READ_ONLY_HINTS):
        return failure
    message = f"{failure.message} (this data source is read-only: set config.readOnly to false to allow writes)"
    return NodeError(message, retryable=False, error_type=failure.error_type)


def _refused(source: DataSource, exc: SourceRefusedError) -> NodeError:
    return NodeError(f"data source {source.name!r}: {exc}", retryable=False, error_type="ConfigError")


class SqlRunner:
    def __init__(
        self,
        *,
        connect_timeout: float = 10.0,
        pool_size: int = 5,
        sqlite: SqlitePolicy | None = None,
        own_database_url: str | None = None,
    ) -> None:
        self.connect_timeout = connect_timeout
        self.pool_size = pool_size
        self.sqlite = sqlite or SqlitePolicy()
        self.own_database_url = own_database_url
        self._own_identity: PostgresIdentity | None = None
        self._engines: dict[str, tuple[float, AsyncEngine]] = {}
        self._lock = asyncio.Lock()

    async def _own_postgres(self) -> PostgresIdentity | None:
        """Who Flowdeck's own PostgreSQL server and database are (``None`` when it is not PostgreSQL)."""
        if self._own_identity is None and self.own_database_url:
            if make_url(self.own_database_url).get_backend_name() != "postgresql":
                return None
            url = async_sql_url(self.own_database_url)  # postgresql:// too, as Flowdeck itself accepts it
            own = create_async_engine(url, poolclass=NullPool)
            try:
                async with own.connect() as conn:
                    driver: Any = (await conn.get_raw_connection()).driver_connection
                    self._own_identity = await postgres_identity(driver)
            except Exception as exc:  # noqa: BLE001  (no source may connect until this is known)
                message = f"cannot tell Flowdeck's own database apart from data sources yet: {type(exc).__name__}"
                raise NodeError(message, error_type="ConnectionError") from None
            finally:
                await own.dispose()
        return self._own_identity

    async def _create_engine(self, source: DataSource, secrets: Mapping[str, str]) -> AsyncEngine:
        try:
            url = async_sql_url(str(source.config.get("url", "")), secrets.get("password"))
        except ValueError as exc:
            raise NodeError(f"data source {source.name!r}: {exc}", retryable=False, error_type="ConfigError") from None
        read_only = is_read_only(source.config)
        kwargs: dict[str, Any] = {"pool_pre_ping": True, "pool_recycle": 1800}
        backend = url.get_backend_name()
        if backend == "sqlite":
            try:
                path = self.sqlite.file_of(url)
            except SourceRefusedError as exc:
                raise _refused(source, exc) from None
            kwargs["async_creator"] = _sqlite_opener(path, read_only or self.sqlite.always_read_only(path))
            url = URL.create("sqlite+aiosqlite")
        elif backend != "postgresql" and read_only:
            message = (f"data source {source.name!r}: read-only mode is enforced for PostgreSQL and SQLite only; "
                       f"set config.readOnly to false to use {url.drivername}")  # fmt: skip
            raise NodeError(message, retryable=False, error_type="ConfigError")
        else:
            kwargs.update(pool_size=self.pool_size, max_overflow=self.pool_size)
            if url.get_driver_name() == "asyncpg":
                kwargs["connect_args"] = {"timeout": self.connect_timeout}
        try:
            engine = create_async_engine(url, **kwargs)
        except (sa.exc.ArgumentError, sa.exc.InvalidRequestError, ImportError) as exc:
            message = f"data source {source.name!r}: cannot use this URL: {exc}"
            raise NodeError(message, retryable=False, error_type="ConfigError") from None
        if backend == "postgresql":
            own = await self._own_postgres()
            if own is not None:
                _refuse_own_database(engine, source, own)
        return engine

    async def _engine_for(self, source: DataSource, secrets: Mapping[str, str]) -> AsyncEngine:
        cached = self._engines.get(source.id)
        if cached is not None and cached[0] == source.updated_at:
            return cached[1]
        async with self._lock:
            cached = self._engines.get(source.id)
            if cached is not None and cached[0] == source.updated_at:
                return cached[1]
            engine = await self._create_engine(source, secrets)
            self._engines[source.id] = (source.updated_at, engine)
        if cached is not None:
            await cached[1].dispose()
        return engine

    async def forget(self, source_id: str) -> None:
        """Dispose the engine of a data source (after it changed or was deleted)."""
        cached = self._engines.pop(source_id, None)
        if cached is not None:
            await cached[1].dispose()

    async def close(self) -> None:
        engines, self._engines = list(self._engines.values()), {}
        for _, engine in engines:
            await engine.dispose()

    async def _arm_sqlite(self, conn: AsyncConnection, timeout: float) -> list[float] | None:
        holder: list[float] | None = conn.info.get(_DEADLINE_KEY)
        if holder is None:
            driver: Any = (await conn.get_raw_connection()).driver_connection
            if not hasattr(driver, "set_progress_handler"):
                return None
            deadline = holder = [math.inf]
            await driver.set_progress_handler(lambda: 1 if time.monotonic() > deadline[0] else 0, 1000)
            await driver.set_authorizer(_authorize)
            conn.info[_DEADLINE_KEY] = holder
        holder[0] = time.monotonic() + timeout
        return holder

    async def run(
        self,
        source: DataSource,
        secrets: Mapping[str, str],
        query: SavedQuery,
        args: Mapping[str, Any],
        *,
        timeout: float,
        row_limit: int,
    ) -> dict[str, Any]:
        engine = await self._engine_for(source, secrets)
        return await self._run_on(engine, source, query.name, str(query.definition["sql"]), args, timeout, row_limit)

    async def probe(self, source: DataSource, secrets: Mapping[str, str], *, timeout: float) -> None:
        """Connect the way a query would (every guard included) and run ``SELECT 1``; a ``NodeError`` says why not."""
        engine = await self._create_engine(source, secrets)
        try:
            await self._run_on(engine, source, "connection test", "SELECT 1", {}, timeout, 1)
        finally:
            await engine.dispose()

    async def _run_on(
        self,
        engine: AsyncEngine,
        source: DataSource,
        name: str,
        sql: str,
        args: Mapping[str, Any],
        timeout: float,
        row_limit: int,
    ) -> dict[str, Any]:
        expanding: list[sa.BindParameter[Any]] = [
            sa.bindparam(key, expanding=True) for key, value in args.items() if isinstance(value, list)
        ]
        statement = sa.text(sql).bindparams(*expanding)
        state = _Attempt(read_only=is_read_only(source.config))
        session = asyncio.ensure_future(self._session(engine, state, statement, dict(args), sql, timeout, row_limit))
        try:
            async with asyncio.timeout(timeout + min(2.0, 0.25 + timeout / 10)):
                return await _unless_cancelled(session, state)
        except NodeError:
            raise
        except Exception as error:  # noqa: BLE001  (any driver's failure becomes a classified NodeError)
            positions = _positions(statement, engine)
            failure = classify_sql_error(
                error, query=name, source=source.name, connecting=state.connecting, positions=positions
            )
            raise _explain_read_only(failure, state.read_only) from None

    async def _session(
        self,
        engine: AsyncEngine,
        state: _Attempt,
        statement: sa.TextClause,
        params: dict[str, Any],
        sql: str,
        timeout: float,
        row_limit: int,
    ) -> dict[str, Any]:
        async with engine.connect() as conn:
            state.connecting = False
            if engine.dialect.name == "sqlite":
                state.deadline = await self._arm_sqlite(conn, timeout)
            try:
                async with conn.begin():
                    if engine.dialect.name == "postgresql":
                        if state.read_only:  # first: it must come before any query of the transaction
                            await conn.execute(sa.text("SET TRANSACTION READ ONLY"))
                        await conn.execute(
                            sa.text("SELECT set_config('statement_timeout', :ms, true)"),
                            {"ms": str(max(1, int(timeout * 1000)))},
                        )
                    return await self._fetch(conn, statement, params, row_limit, bool(_ROWS_FIRST.match(sql)))
            finally:
                if state.deadline is not None:
                    state.deadline[0] = math.inf

    @staticmethod
    async def _fetch(
        conn: AsyncConnection, statement: sa.TextClause, params: dict[str, Any], row_limit: int, stream: bool
    ) -> dict[str, Any]:
        if stream:
            streamed = await conn.stream(statement, params)
            real = cast("sa.CursorResult[Any]", streamed._real_result)
            if not real.returns_rows:
                return _no_rows(real.rowcount)
            columns = list(streamed.keys())
            rows = list(await streamed.fetchmany(row_limit + 1))
            await streamed.close()
            return _shape(columns, rows, row_limit)
        result = await conn.execute(statement, params)
        if not result.returns_rows:
            return _no_rows(result.rowcount)
        columns = list(result.keys())
        rows = list(result.fetchmany(row_limit + 1))
        result.close()
        return _shape(columns, rows, row_limit)
