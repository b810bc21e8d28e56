"""The SQL runner: one SQLAlchemy async engine per data source, a statement timeout, a row limit.

Engines are cached per data source and rebuilt when the source changes (``updated_at``); the old one
is disposed. Every run is one transaction: it commits when the statement succeeds, so a saved query
may write. Timeouts: PostgreSQL gets ``statement_timeout`` for the transaction (``set_config(...,
true)`` is ``SET LOCAL`` with a bound value); SQLite gets a progress handler that interrupts the
statement at its deadline; every dialect also runs under ``asyncio.timeout`` as a backstop.
A statement that starts with SELECT / WITH / VALUES / TABLE / SHOW / EXPLAIN / PRAGMA is streamed
and read up to ``row_limit + 1`` rows, so a huge result is never loaded; any other statement is run
buffered, so ``rowCount`` is the number of rows it changed (``INSERT ... RETURNING`` gives its rows).
``truncated`` says whether rows were left out. If the caller is cancelled (the node's own timeout, a
cancelled run) the statement is interrupted before the connection is given up.

SQLite data sources open files on the server: a path in ``protected_paths`` (Flowdeck's own database)
is refused, and ATTACH / DETACH are denied by an authorizer, so a query cannot reach other files.
"""

from __future__ import annotations

import asyncio
import math
import re
import sqlite3
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, cast

import sqlalchemy as sa
from sqlalchemy.engine import URL
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine, create_async_engine

from flowdeck.domain.errors import NodeError
from flowdeck.queries.models import DataSource, SavedQuery
from flowdeck.queries.sqlerrors import classify_sql_error
from flowdeck.queries.validation import async_sql_url
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


def _sqlite_path(url: URL) -> Path | None:
    database = url.database or ""
    if database.startswith("file:"):
        database = database[5:].split("?", 1)[0]
    if not database or database == ":memory:":
        return None
    return Path(database).expanduser().resolve()


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


class SqlRunner:
    def __init__(
        self,
        *,
        connect_timeout: float = 10.0,
        pool_size: int = 5,
        protected_paths: Sequence[str | Path] = (),
        allow_sqlite: bool = True,
    ) -> None:
        self.connect_timeout = connect_timeout
        self.pool_size = pool_size
        self.protected_paths = [Path(p).expanduser().resolve() for p in protected_paths]
        self.allow_sqlite = allow_sqlite
        self._engines: dict[str, tuple[float, AsyncEngine]] = {}
        self._lock = asyncio.Lock()

    def _create_engine(self, source: DataSource, secrets: Mapping[str, str]) -> AsyncEngine:
        try:
            url = async_sql_url(str(source.config.get("url", "")), secrets.get("password"))
        except ValueError as exc:
            raise NodeError(f"data source {source.name!r}: {exc}", retryable=False, error_type="ConfigError") from None
        kwargs: dict[str, Any] = {"pool_pre_ping": True, "pool_recycle": 1800}
        backend = url.get_backend_name()
        if backend == "sqlite":
            self._check_sqlite(source, url)
            kwargs["connect_args"] = {"timeout": 5}
        else:
            kwargs.update(pool_size=self.pool_size, max_overflow=self.pool_size)
            if url.get_driver_name() == "asyncpg":
                kwargs["connect_args"] = {"timeout": self.connect_timeout}
        try:
            return create_async_engine(url, **kwargs)
        except (sa.exc.ArgumentError, sa.exc.InvalidRequestError, ImportError) as exc:
            message = f"data source {source.name!r}: cannot use this URL: {exc}"
            raise NodeError(message, retryable=False, error_type="ConfigError") from None

    def _check_sqlite(self, source: DataSource, url: URL) -> None:
        if not self.allow_sqlite:
            raise NodeError(
                "SQLite data sources are disabled on this server", retryable=False, error_type="ConfigError"
            )
        path = _sqlite_path(url)
        if path is not None and any(path == p or (path.exists() and path.samefile(p)) for p in self.protected_paths):
            message = f"data source {source.name!r}: this SQLite file is Flowdeck's own database"
            raise NodeError(message, retryable=False, error_type="ConfigError")

    async def _engine_for(self, source: DataSource, secrets: Mapping[str, str]) -> AsyncEngine:
        cached = self._engines.get(source.id)
        if cached is not None and cached[0] == source.updated_at:
            return cached[1]
        async with self._lock:
            cached = self._engines.get(source.id)
            if cached is not None and cached[0] == source.updated_at:
                return cached[1]
            engine = self._create_engine(source, secrets)
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
        sql = str(query.definition["sql"])
        expanding: list[sa.BindParameter[Any]] = [
            sa.bindparam(name, expanding=True) for name, value in args.items() if isinstance(value, list)
        ]
        statement = sa.text(sql).bindparams(*expanding)
        state = _Attempt()
        session = asyncio.ensure_future(self._session(engine, state, statement, dict(args), sql, timeout, row_limit))
        try:
            async with asyncio.timeout(timeout + min(2.0, 0.25 + timeout / 10)):
                return await _unless_cancelled(session, state)
        except NodeError:
            raise
        except Exception as error:  # noqa: BLE001  (any driver's failure becomes a classified NodeError)
            positions = _positions(statement, engine)
            raise classify_sql_error(
                error, query=query.name, source=source.name, connecting=state.connecting, positions=positions
            ) from None

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
