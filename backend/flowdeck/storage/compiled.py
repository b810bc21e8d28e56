"""Hot statements compiled once to SQLite SQL and run on the ``sqlite3`` cursor directly (SQLite only).

SQLAlchemy's execution path (parameter processing, result set-up, events) costs about 25 us per
statement; the statement itself takes 1-2 us on SQLite. The engine's per-node statements are
simple (no IN lists), so they are compiled here once, with their bind names in order, and run with
a tuple of parameters. JSON parameters are encoded the way the ``JSON`` column type would.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import msgspec
from sqlalchemy.dialects import sqlite

__all__ = ("CompiledResult", "CompiledStatement", "compile_for_sqlite")

_dialect = sqlite.dialect()
_encoder = msgspec.json.Encoder()


@dataclass(frozen=True, slots=True)
class CompiledStatement:
    sql: str
    names: tuple[str, ...]
    """The bind parameter names, in placeholder order."""
    json_names: frozenset[str]
    fixed: Mapping[str, Any]
    """Parameters the statement itself sets (an OFFSET of 0, literals)."""
    returns_rows: bool

    def arguments(self, parameters: Mapping[str, Any]) -> tuple[Any, ...]:
        if self.fixed:
            parameters = {**self.fixed, **parameters}
        json_names = self.json_names
        return tuple(
            _encoder.encode(parameters[name]).decode() if name in json_names else parameters[name]
            for name in self.names
        )

    def run(
        self, connection: sqlite3.Connection, parameters: Mapping[str, Any] | Sequence[Mapping[str, Any]]
    ) -> CompiledResult:
        if isinstance(parameters, Mapping):
            cursor = connection.execute(self.sql, self.arguments(parameters))
            return CompiledResult(cursor.fetchall() if self.returns_rows else [], cursor.rowcount)
        rows: list[Any] = []
        count = 0
        for one in parameters:  # sqlite3's executemany cannot return rows; each execute is microseconds
            cursor = connection.execute(self.sql, self.arguments(one))
            if self.returns_rows:
                rows.extend(cursor.fetchall())
            count += max(cursor.rowcount, 0)
        return CompiledResult(rows, count)


def compile_for_sqlite(
    statement: Any, *, column_keys: Sequence[str] | None = None, json_names: Sequence[str] = ()
) -> CompiledStatement:
    """Compile a Core statement; ``column_keys`` renders an INSERT's VALUES for those keys."""
    compiled = statement.compile(dialect=_dialect, column_keys=list(column_keys) if column_keys else None)
    names = tuple(compiled.positiontup or ())
    unknown = set(json_names) - set(names)
    if unknown:
        raise ValueError(f"JSON parameters {sorted(unknown)} are not parameters of {compiled.string}")
    fixed = {name: bind.value for name, bind in compiled.binds.items() if not bind.required and name in names}
    returns_rows = bool(statement.is_select or compiled.effective_returning)
    return CompiledStatement(compiled.string, names, frozenset(json_names), fixed, returns_rows)


class CompiledResult:
    """The part of SQLAlchemy's result interface the stores use."""

    __slots__ = ("_rows", "rowcount")

    def __init__(self, rows: list[Any], rowcount: int) -> None:
        self._rows = rows
        self.rowcount = rowcount

    def __iter__(self) -> Iterator[Any]:
        return iter(self._rows)

    def all(self) -> list[Any]:
        return self._rows

    def first(self) -> Any:
        return self._rows[0] if self._rows else None

    def one(self) -> Any:
        if len(self._rows) != 1:
            raise LookupError(f"expected one row, got {len(self._rows)}")
        return self._rows[0]

    def scalar_one(self) -> Any:
        return self.one()[0]

    def scalar_one_or_none(self) -> Any:
        if len(self._rows) > 1:
            raise LookupError(f"expected at most one row, got {len(self._rows)}")
        return self._rows[0][0] if self._rows else None
