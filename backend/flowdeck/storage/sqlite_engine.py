"""SQLite for ``storage/database.py``: the open transaction that write transactions share (group commit), the
connection its members write through, and the engine on the file through ``sqlite3`` (WAL, the synchronous
level asked for, foreign keys), whose write transactions take the write lock up front (``BEGIN IMMEDIATE``)."""

from __future__ import annotations

import asyncio
import contextlib
import sqlite3
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

import sqlalchemy as sa
from sqlalchemy.engine import make_url

from flowdeck.storage.compiled import CompiledStatement
from flowdeck.storage.json_codec import json_dumps, json_loads

__all__ = (
    "GROUP_LIMIT",
    "Group",
    "InlineConnection",
    "StatementCounter",
    "reclaim_pages",
    "sqlite_engine",
)

T = TypeVar("T")


GROUP_LIMIT = 64
"""At most this many write transactions share one SQLite commit (a bound on how long the first waits)."""


@dataclass(slots=True)
class StatementCounter:
    """Counts round trips to the database (statements, BEGIN, COMMIT, ROLLBACK) and commits, for the
    benchmark's per-node figures and ``/metrics``; on SQLite also how long this process held the write
    lock and waited for another process to let go of it (where a file's one writer becomes the limit)."""

    round_trips: int = 0
    commits: int = 0
    write_lock_held_seconds: float = 0.0
    write_lock_wait_seconds: float = 0.0

    def reset(self) -> None:
        self.round_trips = 0
        self.commits = 0
        self.write_lock_held_seconds = 0.0
        self.write_lock_wait_seconds = 0.0


class InlineConnection:
    """A sync SQLAlchemy connection behind the async ``Connection`` interface (SQLite only).

    Compiled hot statements (storage/compiled.py) skip SQLAlchemy and run on its sqlite3 connection,
    inside the same transaction.
    """

    def __init__(self, conn: sa.Connection, counter: StatementCounter) -> None:
        self._conn = conn
        self._raw: sqlite3.Connection = conn.connection.driver_connection  # type: ignore[assignment]
        self._counter = counter
        self.committed: asyncio.Future[None] | None = None

    async def execute(self, statement: Any, parameters: Any = None) -> Any:
        if isinstance(statement, CompiledStatement):
            self._counter.round_trips += 1
            return statement.run_sqlite(self._raw, parameters)
        return self._conn.execute(statement, parameters)

    async def commit_durably(self) -> None:
        """Nothing to do: SQLite's readers see a group's writes only once it committed (they are durable)."""

    async def run_sync(self, fn: Callable[[sa.Connection], T]) -> T:
        return fn(self._conn)


class Group:
    """An open SQLite write transaction that the queued write transactions share (group commit).

    ``conn`` is the process's write connection, kept open (``Database``): the group's BEGIN IMMEDIATE and
    COMMIT go to sqlite3 directly, as the reads' do (a check-out, a begin and a commit through SQLAlchemy
    cost about 50 us a group, measured)."""

    def __init__(self, conn: sa.Connection) -> None:
        self.conn = conn
        self.raw: sqlite3.Connection = conn.connection.driver_connection  # type: ignore[assignment]
        self.raw.execute("BEGIN IMMEDIATE")  # writes only: the write lock up front
        self.opened_at = time.perf_counter()
        """When it took SQLite's write lock (``StatementCounter.write_lock_held_seconds``)."""
        self.members = 0
        self.released = 0
        """Members that went on without waiting for the commit (early release)."""
        self.committed: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self.flush: asyncio.Task[None] | None = None
        """The task that commits the group at the next turn of the event loop."""
        self.timer: asyncio.TimerHandle | None = None
        """Commits the group ``defer_seconds`` after its first early release, if nothing did before."""

    def commit(self) -> None:
        """Commit; if that fails, roll back what is left of the transaction and raise."""
        try:
            self.raw.execute("COMMIT")
        except BaseException:
            with contextlib.suppress(sqlite3.Error):
                if self.raw.in_transaction:
                    self.raw.execute("ROLLBACK")
            raise


def sqlite_engine(url: str, synchronous: str) -> sa.Engine:
    """A synchronous engine on the database file (sqlite3), one connection per thread, set up by ``_sqlite_connect``;
    SQLAlchemy begins no transaction on it (``isolation_level`` None): its users send BEGIN and COMMIT."""
    engine = sa.create_engine(
        make_url(url).set(drivername="sqlite+pysqlite"),
        poolclass=sa.pool.SingletonThreadPool,
        json_serializer=json_dumps,
        json_deserializer=json_loads,
    )
    sa.event.listen(engine, "connect", _sqlite_connect(synchronous))
    return engine


def _sqlite_connect(synchronous: str) -> Callable[[Any, Any], None]:
    def connect(dbapi_connection: Any, _record: Any) -> None:
        dbapi_connection.isolation_level = None  # no implicit BEGIN: _sqlite_begin says which kind
        cursor = dbapi_connection.cursor()
        cursor.execute("PRAGMA busy_timeout=5000")  # first: the pragmas below may wait for another writer
        if cursor.execute("PRAGMA page_count").fetchone()[0] == 0:
            # A new database gives freed pages back (the pruner's incremental_vacuum); an existing one
            # takes it from migration 0014's VACUUM. Only on an empty file: it must precede the first table,
            # and on a database in use it would wait for the lock of a write transaction left open.
            cursor.execute("PRAGMA auto_vacuum=INCREMENTAL")
        for pragma in (
            "PRAGMA journal_mode=WAL",
            f"PRAGMA synchronous={synchronous}",
            "PRAGMA foreign_keys=ON",
            "PRAGMA cache_size=-65536",
        ):
            cursor.execute(pragma)
        cursor.close()

    return connect


def reclaim_pages(engine: sa.Engine, pages: int) -> int:
    """``Database.reclaim_space`` on SQLite, outside any transaction: up to ``pages`` free pages handed back,
    how many are still free, and the WAL checkpointed when fewer than ``pages`` were (the file shrinks now)."""
    with engine.connect() as conn:
        raw = conn.connection.driver_connection
        assert raw is not None
        # executescript steps the pragma to its end; execute() would free one page per call
        raw.executescript(f"PRAGMA incremental_vacuum({int(pages)});")
        left = int(raw.execute("PRAGMA freelist_count").fetchone()[0])
        if left < pages:
            raw.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()
        return left
