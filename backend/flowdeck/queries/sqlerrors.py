"""SQL failures sorted into retryable (connection, timeout, lock, transient server state) and not
(syntax, unknown table or column, bad argument value, constraint, authentication, missing database).

The message names the data source or saved query and gives the driver's own explanation (with
``$1`` turned back into the argument's name); never the URL or the password.
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Iterator, Sequence

from sqlalchemy import exc as sa_exc

from flowdeck.domain.errors import NodeError

__all__ = ("classify_sql_error", "driver_message")

# SQLSTATE classes and codes (PostgreSQL): transient ones are worth another attempt.
_RETRYABLE_STATES = ("08", "40", "53", "57P01", "57P02", "57P03", "58")
_CONFIG_STATES = ("28", "3D000")
_SQLITE_TRANSIENT = ("database is locked", "database table is locked", "disk i/o error", "unable to open database")
_ARGUMENT_REF = re.compile(r"query argument \$(\d+)")


def _chain(error: BaseException) -> Iterator[BaseException]:
    seen: set[int] = set()
    stack: list[BaseException | None] = [error]
    while stack:
        item = stack.pop()
        if item is None or id(item) in seen:
            continue
        seen.add(id(item))
        yield item
        orig = getattr(item, "orig", None)
        stack += [item.__context__, item.__cause__, orig if isinstance(orig, BaseException) else None]


def _sqlstate(error: BaseException) -> str | None:
    for item in _chain(error):
        state = getattr(item, "sqlstate", None) or getattr(item, "pgcode", None)
        if isinstance(state, str) and state:
            return state
    return None


def driver_message(error: BaseException) -> str:
    """The driver's own words, without SQLAlchemy's SQL echo or class-name prefix."""
    orig = getattr(error, "orig", None)
    base = orig if isinstance(orig, BaseException) and str(orig) else error
    text = str(base).split("\n[SQL:", 1)[0].split("\n(Background on this error", 1)[0]
    text = re.sub(r"^\(.+?\) ", "", re.sub(r"^<class '[^']+'>: ", "", text))
    return text.strip() or type(base).__name__


def _name_arguments(message: str, positions: Sequence[str]) -> str:
    def name(match: re.Match[str]) -> str:
        index = int(match.group(1)) - 1
        return f"argument {positions[index]!r}" if 0 <= index < len(positions) else match.group(0)

    return _ARGUMENT_REF.sub(name, message)


def _is_connection_error(error: BaseException) -> bool:
    return any(
        isinstance(item, OSError | ConnectionError)
        or (isinstance(item, sa_exc.DBAPIError) and item.connection_invalidated)
        or type(item).__name__ in ("ConnectionDoesNotExistError", "InterfaceError", "InternalClientError")
        for item in _chain(error)
    )


def _from_sqlstate(state: str, detail: str, what: str, connecting: bool) -> NodeError:
    if state == "57014":
        return NodeError(f"{what}: the statement timed out ({detail})", error_type="QueryTimeout")
    if state.startswith(_CONFIG_STATES):
        return NodeError(f"{what}: cannot log in: {detail}", retryable=False, error_type="ConfigError")
    if state.startswith(_RETRYABLE_STATES) or connecting:
        return NodeError(f"{what}: server unavailable: {detail}", error_type="ConnectionError")
    if state.startswith("22"):
        return NodeError(f"{what}: invalid value: {detail}", retryable=False, error_type="ArgumentError")
    if state.startswith("23"):
        return NodeError(f"{what}: constraint violated: {detail}", retryable=False, error_type="ConstraintViolation")
    return NodeError(f"{what}: SQL error: {detail}", retryable=False, error_type="SQLError")


def _from_sqlite(error: sqlite3.Error, detail: str, what: str) -> NodeError:
    lowered = detail.lower()
    if lowered == "interrupted":
        return NodeError(f"{what}: the statement timed out", error_type="QueryTimeout")
    if lowered.startswith(_SQLITE_TRANSIENT):
        return NodeError(f"{what}: database unavailable: {detail}", error_type="ConnectionError")
    if isinstance(error, sqlite3.IntegrityError):
        return NodeError(f"{what}: constraint violated: {detail}", retryable=False, error_type="ConstraintViolation")
    if lowered.startswith(("not authorized", "authorization denied")):
        detail = "not authorized (ATTACH, DETACH and extensions are not allowed)"
    return NodeError(f"{what}: SQL error: {detail}", retryable=False, error_type="SQLError")


def classify_sql_error(
    error: BaseException, *, query: str, source: str, connecting: bool, positions: Sequence[str] = ()
) -> NodeError:
    """A ``NodeError`` for ``error``; ``connecting`` says it happened before the statement was sent."""
    detail = _name_arguments(driver_message(error), positions)
    where = f"data source {source!r}" if connecting else f"saved query {query!r}"
    if isinstance(error, TimeoutError):
        return NodeError(f"{where}: timed out", error_type="QueryTimeout")
    state = _sqlstate(error)
    if state is not None:
        if state == "22000" and "query argument" in driver_message(error):
            return NodeError(f"{where}: {detail}", retryable=False, error_type="ArgumentError")
        return _from_sqlstate(state, detail, where, connecting)
    sqlite_error = next((e for e in _chain(error) if isinstance(e, sqlite3.Error)), None)
    if sqlite_error is not None:
        return _from_sqlite(sqlite_error, detail, where)
    if connecting or _is_connection_error(error):
        return NodeError(f"cannot connect to data source {source!r}: {detail}", error_type="ConnectionError")
    return NodeError(f"{where}: SQL error: {detail}", retryable=False, error_type="SQLError")
