"""Hot statements compiled once and run on the driver directly (``sqlite3`` or asyncpg).

SQLAlchemy's execution path (parameter processing, result set-up, events, and on asyncpg a greenlet
hop) costs about 25 us per statement on SQLite, where the statement itself takes 1-2 us, and about
110 us on PostgreSQL, where a bare asyncpg round trip takes 130 us (measured on these machines). The
engine's per-node statements are simple (no IN lists), so they are compiled here once per dialect,
with their bind names in order, and run with a tuple of parameters inside the open transaction
(SQLAlchemy's on SQLite, asyncpg's own on PostgreSQL: storage/database.py). JSON parameters are
encoded as the ``JSON`` column type would (the asyncpg connection's JSON codecs, set up by
SQLAlchemy, take the encoded text).
"""

from __future__ import annotations

import operator
import sqlite3
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import msgspec
from sqlalchemy.dialects import sqlite
from sqlalchemy.dialects.postgresql import asyncpg
from sqlalchemy.engine import Dialect

__all__ = ("CompiledResult", "CompiledStatement", "EachDialect", "compile_each", "compile_statement")

_encoder = msgspec.json.Encoder()
_decoder = msgspec.json.Decoder()
DIALECTS: dict[bool, Dialect] = {True: sqlite.dialect(), False: asyncpg.dialect()}  # type: ignore[no-untyped-call]

Parameters = Mapping[str, Any] | Sequence[Mapping[str, Any]]


@dataclass(frozen=True, slots=True)
class CompiledStatement:
    core: Any
    """The Core statement it was compiled from: PostgreSQL runs many rows at once through it
    (SQLAlchemy renders one multi-row INSERT; one compiled execution per row would be a round trip each)."""
    sql: str
    names: tuple[str, ...]
    """The bind parameter names, in placeholder order."""
    json_names: frozenset[str]
    fixed: Mapping[str, Any]
    """Parameters the statement itself sets (an OFFSET of 0, literals)."""
    returns_rows: bool
    json_columns: tuple[int, ...] = ()
    """Result columns holding JSON: sqlite3 returns their text (asyncpg's codec decodes them itself)."""
    inserted: tuple[str, ...] | None = None
    """SQLite, an INSERT compiled without its RETURNING clause (which costs SQLite 3.40 about 20 us a
    row, more than the insert): a row per row inserted (``rowcount``), holding for each name
    ``"rowid"`` (the new row's id) or the value of the parameter of that name: what RETURNING would."""
    _pick: Callable[[Mapping[str, Any]], tuple[Any, ...]] = field(init=False, repr=False, compare=False)
    """The parameters' values in placeholder order (a C getter: this runs for every statement)."""
    _json_at: tuple[int, ...] = field(init=False, repr=False, compare=False)
    """The places of the JSON parameters among them."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "_pick", _picker(self.names))
        object.__setattr__(self, "_json_at", tuple(i for i, name in enumerate(self.names) if name in self.json_names))

    def arguments(self, parameters: Mapping[str, Any]) -> tuple[Any, ...]:
        if self.fixed:
            parameters = {**self.fixed, **parameters}
        values = self._pick(parameters)
        if not self._json_at:
            return values
        encoded = list(values)
        for index in self._json_at:
            encoded[index] = _encoder.encode(encoded[index]).decode()
        return tuple(encoded)

    @staticmethod
    def _each(parameters: Parameters) -> Sequence[Mapping[str, Any]]:
        return (parameters,) if isinstance(parameters, dict | Mapping) else parameters  # dict first: no ABC check

    def run_sqlite(self, connection: sqlite3.Connection, parameters: Parameters) -> CompiledResult:
        rows: list[Any] = []
        count = 0
        for one in self._each(parameters):  # sqlite3's executemany cannot return rows; each execute is microseconds
            cursor = connection.execute(self.sql, self.arguments(one))
            if self.inserted is not None:
                if cursor.rowcount == 1:
                    rows.append(tuple(cursor.lastrowid if name == "rowid" else one[name] for name in self.inserted))
                    count += 1
                continue
            if self.returns_rows:
                fetched = cursor.fetchall()
                rows.extend(map(self._decoded, fetched) if self.json_columns else fetched)
            count += max(cursor.rowcount, 0)
        return CompiledResult(rows, count)

    def _decoded(self, row: tuple[Any, ...]) -> tuple[Any, ...]:
        values = list(row)
        for index in self.json_columns:
            if isinstance(values[index], str | bytes):  # a JSON number comes back a number: the column's affinity
                values[index] = _decoder.decode(values[index])
        return tuple(values)

    async def run_asyncpg(self, connection: Any, parameters: Parameters) -> CompiledResult:
        """Run on an asyncpg connection (its statement cache prepares each SQL text once)."""
        rows: list[Any] = []
        count = 0
        for one in self._each(parameters):
            if self.returns_rows:
                fetched = await connection.fetch(self.sql, *self.arguments(one))
                rows.extend(fetched)
                count += len(fetched)
            else:
                status = await connection.execute(self.sql, *self.arguments(one))
                count += int(status.rsplit(" ", 1)[-1])  # "UPDATE 1", "DELETE 0"
        return CompiledResult(rows, count)


def _picker(names: tuple[str, ...]) -> Callable[[Mapping[str, Any]], tuple[Any, ...]]:
    if len(names) > 1:
        return operator.itemgetter(*names)
    if names:
        name = names[0]
        return lambda parameters: (parameters[name],)
    return lambda _: ()


def compile_statement(
    statement: Any,
    *,
    is_sqlite: bool,
    column_keys: Sequence[str] | None = None,
    json_names: Sequence[str] = (),
    returns_rows: bool | None = None,
    json_columns: Sequence[int] = (),
    sqlite_inserted: tuple[Any, tuple[str, ...]] | None = None,
) -> CompiledStatement:
    """Compile a Core statement for one dialect; ``column_keys`` renders an INSERT's VALUES for those keys.

    ``returns_rows`` is needed for textual SQL only (Core statements say whether they return rows).
    ``sqlite_inserted``: on SQLite, (the same INSERT without RETURNING, what to return instead: see
    ``CompiledStatement.inserted``).
    """
    inserted = None
    if is_sqlite and sqlite_inserted is not None:
        statement, inserted = sqlite_inserted[0], sqlite_inserted[1]
    compiled = statement.compile(dialect=DIALECTS[is_sqlite], column_keys=list(column_keys) if column_keys else None)
    names = tuple(compiled.positiontup or ())
    unknown = set(json_names) - set(names)
    if unknown:
        raise ValueError(f"JSON parameters {sorted(unknown)} are not parameters of {compiled.string}")
    fixed = {name: bind.value for name, bind in compiled.binds.items() if not bind.required and name in names}
    if returns_rows is None:
        returns_rows = bool(statement.is_select or compiled.effective_returning) or inserted is not None
    return CompiledStatement(
        statement, compiled.string, names, frozenset(json_names), fixed, returns_rows, tuple(json_columns), inserted
    )


@dataclass(frozen=True, slots=True)
class EachDialect:
    """A store's statement compiled for both dialects once, at import (``on`` picks the database's)."""

    sqlite: CompiledStatement
    postgres: CompiledStatement

    def on(self, is_sqlite: bool) -> CompiledStatement:
        return self.sqlite if is_sqlite else self.postgres


def compile_each(statement: Any, **options: Any) -> EachDialect:
    """``compile_statement`` for SQLite and for PostgreSQL (a statement whose SQL is the same Core on both)."""
    return EachDialect(
        compile_statement(statement, is_sqlite=True, **options),
        compile_statement(statement, is_sqlite=False, **options),
    )


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
