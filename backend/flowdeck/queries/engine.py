"""The query engine: runs a saved query against its data source with bound arguments (SPEC §6).

``run`` checks the arguments against the query's declared parameters (each one must be given, no
other), then hands over to the SQL or HTTP runner under the time and row limits. Results:
SQL ``{rows, rowCount, columns, truncated}``, HTTP ``{status, headers, body}``. Every failure is a
``NodeError`` whose ``retryable`` flag says whether another attempt can help.

Where a data source may point is decided by the operator's settings, given here:
``sqlite_dirs`` (``FLOWDECK_SQLITE_DIRS``; ``None`` refuses SQLite), ``own_database_url``
(Flowdeck's own database, never reachable) and ``http_allow`` (``FLOWDECK_HTTP_ALLOW``).
``check_source`` is what saving a data source checks without connecting; ``probe`` tests a
connection through the very path a query takes.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping, Sequence
from types import TracebackType
from typing import Any, Final

from sqlalchemy.engine import make_url

from flowdeck.domain.errors import ConfigIssue, NodeError
from flowdeck.outbound import OutboundPolicy, URLRefusedError, parse_url
from flowdeck.queries.http_runner import HttpRunner
from flowdeck.queries.models import SQL, DataSource, SavedQuery
from flowdeck.queries.sql_guard import SourceRefusedError, SqlitePolicy
from flowdeck.queries.sql_runner import SqlRunner
from flowdeck.queries.validation import async_sql_url

__all__ = ("DEFAULT_ROW_LIMIT", "DEFAULT_TIMEOUT_SECONDS", "QueryEngine", "bind_arguments")

DEFAULT_ROW_LIMIT: Final = 10_000
DEFAULT_TIMEOUT_SECONDS: Final = 30.0
_SCALARS: Final = (str, int, float, bool, type(None))


def _argument_error(query: SavedQuery, message: str) -> NodeError:
    return NodeError(f"saved query {query.name!r}: {message}", retryable=False, error_type="ArgumentError")


def _sql_value(query: SavedQuery, name: str, value: Any) -> Any:
    if isinstance(value, _SCALARS):
        return value
    if isinstance(value, list | tuple):
        if not all(isinstance(item, _SCALARS) for item in value):
            raise _argument_error(query, f"argument {name!r} is a list (bound as an IN list) of non-plain values")
        return list(value)
    if isinstance(value, dict):
        return json.dumps(value, separators=(",", ":"))  # bind as text; CAST(:x AS jsonb) in the SQL
    raise _argument_error(query, f"argument {name!r} has a value of type {type(value).__name__}")


def bind_arguments(query: SavedQuery, args: Any) -> dict[str, Any]:
    """The values to bind, or a non-retryable ``NodeError`` naming the missing or unknown arguments."""
    if not isinstance(args, Mapping):
        raise _argument_error(query, "args must be an object of argument names to values")
    declared = list(query.parameters)
    missing = [name for name in declared if name not in args]
    unknown = sorted(str(name) for name in args if name not in declared)
    problems = []
    if missing:
        problems.append(f"missing argument{'s' if len(missing) > 1 else ''} {', '.join(map(repr, missing))}")
    if unknown:
        problems.append(f"unknown argument{'s' if len(unknown) > 1 else ''} {', '.join(map(repr, unknown))}")
    if problems:
        expected = ", ".join(map(repr, declared)) or "none"
        raise _argument_error(query, f"{'; '.join(problems)} (the query declares: {expected})")
    if query.kind != SQL:
        return dict(args)
    return {name: _sql_value(query, name, args[name]) for name in declared}


def _own_sqlite_files(database_url: str | None) -> tuple[str, ...]:
    if not database_url:
        return ()
    url = make_url(database_url)
    return (url.database,) if url.get_backend_name() == "sqlite" and url.database else ()


class QueryEngine:
    def __init__(
        self,
        *,
        row_limit: int = DEFAULT_ROW_LIMIT,
        statement_timeout: float = DEFAULT_TIMEOUT_SECONDS,
        connect_timeout: float = 10.0,
        max_response_bytes: int = 10 * 1024 * 1024,
        sqlite_dirs: Sequence[str] | None = None,
        sqlite_read_only_dirs: Sequence[str] = (),
        own_database_url: str | None = None,
        http_allow: OutboundPolicy | Sequence[str] = (),
    ) -> None:
        self.row_limit = row_limit
        self.statement_timeout = statement_timeout
        self.connect_timeout = connect_timeout
        own_files = _own_sqlite_files(own_database_url)
        self.sqlite = SqlitePolicy.create(sqlite_dirs, own_files, sqlite_read_only_dirs)
        policy = http_allow if isinstance(http_allow, OutboundPolicy) else OutboundPolicy.from_entries(http_allow)
        self.outbound = policy
        self.sql = SqlRunner(connect_timeout=connect_timeout, sqlite=self.sqlite, own_database_url=own_database_url)
        self.http = HttpRunner(
            max_response_bytes=max_response_bytes, connect_timeout=connect_timeout, policy=self.outbound
        )

    def check_source(self, kind: str, config: Mapping[str, Any]) -> list[ConfigIssue]:
        """Where a (valid) data source points, checked without connecting: what saving it refuses.

        A SQLite file outside ``FLOWDECK_SQLITE_DIRS``, given with URI parameters, missing, or
        Flowdeck's own; an HTTP base URL whose host is a refused address (any spelling) or a known
        internal name. A name that merely resolves to a refused address is refused when it is used.
        """
        if kind == SQL:
            try:
                url = async_sql_url(str(config.get("url", "")))
                if url.get_backend_name() == "sqlite":
                    self.sqlite.file_of(url)
            except (ValueError, SourceRefusedError) as exc:
                return [ConfigIssue("config.url", str(exc))]
            return []
        try:
            parse_url(config.get("baseUrl"), self.outbound)
        except URLRefusedError as exc:
            return [ConfigIssue("config.baseUrl", f"baseUrl {exc}")]
        return []

    async def probe(self, source: DataSource, secrets: Mapping[str, str]) -> dict[str, Any]:
        """Test a connection: ``{ok, message, latencyMs}`` (SQL: ``SELECT 1``; HTTP: ``GET`` the base URL)."""
        began = time.monotonic()
        timeout = min(self.statement_timeout, max(self.connect_timeout, 1.0))
        try:
            if source.kind == SQL:
                await self.sql.probe(source, secrets, timeout=timeout)
                ok, message = True, "connected and ran SELECT 1"
            else:
                status, reason = await self.http.probe(source, secrets, timeout=timeout)
                ok, message = status < 400, f"GET {source.config['baseUrl']} answered HTTP {status} {reason}".rstrip()
        except NodeError as exc:
            ok, message = False, exc.message
        return {"ok": ok, "message": message, "latencyMs": round((time.monotonic() - began) * 1000, 1)}

    async def run(
        self,
        source: DataSource,
        secrets: Mapping[str, str],
        query: SavedQuery,
        args: Any,
        *,
        timeout: float | None = None,
        row_limit: int | None = None,
    ) -> dict[str, Any]:
        """Run ``query`` on ``source`` (``secrets`` decrypted) with ``args``; the limits only ever shrink."""
        if query.kind != source.kind or query.data_source_id != source.id:
            message = f"saved query {query.name!r} does not belong to data source {source.name!r}"
            raise NodeError(message, retryable=False, error_type="ConfigError")
        values = bind_arguments(query, args)
        seconds = self.statement_timeout if timeout is None else max(0.001, min(timeout, self.statement_timeout))
        if query.kind == SQL:
            limit = self.row_limit if row_limit is None else max(0, min(row_limit, self.row_limit))
            return await self.sql.run(source, secrets, query, values, timeout=seconds, row_limit=limit)
        return await self.http.run(source, secrets, query, values, timeout=seconds)

    async def forget(self, source_id: str) -> None:
        """Drop what is cached for a data source (its SQL engine) after it changed or was deleted."""
        await self.sql.forget(source_id)

    async def close(self) -> None:
        await self.sql.close()
        await self.http.close()

    async def __aenter__(self) -> QueryEngine:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()
