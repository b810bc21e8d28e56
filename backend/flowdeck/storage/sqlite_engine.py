"""SQLite for ``storage/database.py``: the open transaction that write transactions share (group commit),
and the engine on the file through ``sqlite3`` (WAL, the synchronous level asked for, foreign keys), whose
write transactions take the write lock up front (``BEGIN IMMEDIATE``)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import make_url

from flowdeck.storage.json_codec import json_dumps, json_loads

__all__ = ("GROUP_LIMIT", "Group", "sqlite_begin", "sqlite_engine")


GROUP_LIMIT = 64
"""At most this many write transactions share one SQLite commit (a bound on how long the first waits)."""


class Group:
    """An open SQLite write transaction that the queued write transactions share (group commit)."""

    def __init__(self, conn: sa.Connection) -> None:
        self.conn = conn
        self.transaction = conn.begin()
        self.members = 0
        self.released = 0
        """Members that went on without waiting for the commit (early release)."""
        self.committed: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self.flush: asyncio.Task[None] | None = None
        """The task that commits the group at the next turn of the event loop."""
        self.timer: asyncio.TimerHandle | None = None
        """Commits the group ``defer_seconds`` after its first early release, if nothing did before."""


def sqlite_engine(url: str, synchronous: str) -> sa.Engine:
    """A synchronous engine on the database file (sqlite3), one connection per thread, set up by ``_sqlite_connect``
    (``sqlite_begin`` on its "begin" event makes its write transactions take the write lock up front)."""
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


def sqlite_begin(conn: sa.Connection) -> None:
    conn.exec_driver_sql("BEGIN IMMEDIATE")  # writes only: the write lock up front
