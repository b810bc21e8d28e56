"""The database handle: one engine per process, tuned per dialect.

PostgreSQL runs on asyncpg through SQLAlchemy's async engine, with a real pool.

SQLite (the embedded default) runs its statements with the standard ``sqlite3`` module directly
on the event-loop thread, one connection, transactions serialised by an asyncio lock. A statement
on a WAL database takes microseconds, while aiosqlite's hand-off to its thread and back costs about
0.5 ms per statement on these machines (measured: 480 µs vs 1.3 µs for ``SELECT 1``), which alone
would cost the engine ~5 ms per node. Write transactions take the file's write lock up front
(``BEGIN IMMEDIATE``), so a read-then-write decision never fails half-way on another process's
write. The configured URL stays ``sqlite+aiosqlite://``; Alembic migrations use aiosqlite as usual.

Group commit (SQLite): with ``synchronous=FULL`` (the default: a commit survives a power loss, as
PostgreSQL's does) every commit waits for an fsync of the WAL, about 0.25 ms here. So a write
transaction does not commit alone: it runs in a savepoint of one open transaction (its failure rolls
back only its own writes), and the commit comes at the next turn of the event loop, after the write
transactions that other tasks are about to start in this turn have joined (at most 64). A
``transaction()`` block still returns only once its writes are durable. Reads have a connection of
their own, kept open (WAL: they see what is committed), so they never read a group's writes before
its commit; their BEGIN and ROLLBACK go to sqlite3 directly.

Early release (SQLite): a worker going on with the next node of a run does not wait for its
decision's fsync (``transaction(defer=True)``). The writes are in the open group, the next node runs
and its decision joins the same group, so a chain pays one fsync for several nodes. Nothing leaves
the process before it is durable: the decision's effects (updates, wake-ups) are announced when its
group commits (``StateTransaction.committed``), and a handler with effects outside the engine waits
for it first (``settle``), as does a node that reads its context from the log (reads see what is
committed; other reads need not wait: what they see was announced). The group commits once
someone waits for it, at 64 members, or ``defer_seconds`` after its first early release, whichever
is first. If such a group fails to commit, its decisions are lost as in a crash, and the
``loss_listeners`` (the worker) drop what was built on them: the nodes running on them stop and
their leases, which are durable, bring them back. While another process waits for the write lock
(``WriterLock.contended``), a write that ends with no other write of this process queued behind it
commits the group at once: the other process then decides while this one runs its nodes, rather than
waiting for a group held open across them.

Early release (PostgreSQL): the same contract, by asynchronous commit: storage/pg_durability.py.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any, Literal, Protocol, TypeVar

import asyncpg  # type: ignore[import-untyped]
import sqlalchemy as sa
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import make_url
from sqlalchemy.ext.asyncio import create_async_engine

from flowdeck.storage.compiled import compile_statement
from flowdeck.storage.disconnects import (
    DatabaseUnavailableError,
    is_disconnect,
    refused,
    write_track,
)
from flowdeck.storage.json_codec import json_dumps, json_loads
from flowdeck.storage.pg_checkout import PooledConnection
from flowdeck.storage.pg_connection import (
    BACKOFF_LIMIT,
    FRESH,
    AsyncpgConnection,
    WriteTransaction,
    commit,
    mark_fresh,
    note_started_at,
    shielded,
    started_at,
)
from flowdeck.storage.pg_durability import FLUSH_SQL, WalFlusher
from flowdeck.storage.pg_spares import SpareConnections
from flowdeck.storage.schema import metadata
from flowdeck.storage.sqlite_engine import (
    GROUP_LIMIT,
    Group,
    InlineConnection,
    StatementCounter,
    reclaim_pages,
    sqlite_engine,
)
from flowdeck.storage.sqlite_writer_lock import WriterLock, writer_lock_path
from flowdeck.storage.statements import statements_for

T = TypeVar("T")

__all__ = ("Connection", "Database", "StatementCounter")

log = logging.getLogger(__name__)


class Connection(Protocol):
    """What the stores use of a connection: ``await conn.execute(...)`` returning a buffered result."""

    committed: asyncio.Future[None] | None
    """Early release: when this block's writes are durable (SQLite: its group's commit; PostgreSQL: the
    WAL flush that covers them); ``None``: they were durable when the block ended."""

    async def execute(self, statement: Any, parameters: Any = None) -> Any: ...

    async def commit_durably(self) -> None:
        """In an early-released transaction: its writes are seen by others only once durable after all."""

    async def run_sync(self, fn: Callable[[sa.Connection], T]) -> T: ...


class Database:
    def __init__(
        self,
        url: str,
        *,
        pool_size: int = 20,
        one_statement: bool = True,
        sqlite_synchronous: str = "FULL",
        defer_seconds: float = 0.002,
        wal_flush_seconds: float = 0.01,
        reconnect_seconds: float = 15.0,
        application_name: str = "flowdeck",
    ) -> None:
        """``one_statement``: the store takes the common decisions as steps (PostgreSQL: single statements,
        data-modifying CTEs, with the write pairs; SQLite: a chain's step without the general decision,
        storage/state_sqlite.py). ``False`` writes the same rows with the portable decision alone;
        tests/integration/test_one_statement_equivalence.py runs every topology both ways and compares.
        ``sqlite_synchronous``: ``FULL`` (power-loss safe) or ``NORMAL`` (FLOWDECK_SQLITE_SYNCHRONOUS).
        ``defer_seconds``: how long an early-released SQLite group may stay open at most.
        ``wal_flush_seconds`` (PostgreSQL): how long an early-released commit waits at most for the WAL
        flush that makes it durable (its effects, live updates among them, wait as long).
        ``reconnect_seconds`` (PostgreSQL): how long a caller waits for PostgreSQL to take connections
        again (a restart, a failover) before its statement fails (FLOWDECK_DB_RECONNECT_SECONDS).
        ``application_name`` (PostgreSQL): its connections' name in ``pg_stat_activity``."""
        self.url = url
        self.pool_size = pool_size
        self.reconnect_seconds = reconnect_seconds
        self.is_sqlite = url.startswith("sqlite")
        self.counter = StatementCounter()
        self.one_statement = one_statement
        self.sql = statements_for(self.is_sqlite)
        if self.is_sqlite:
            if sqlite_synchronous not in ("FULL", "NORMAL"):
                raise ValueError(f"sqlite_synchronous must be FULL or NORMAL, not {sqlite_synchronous!r}")
            self._sqlite_lock = asyncio.Lock()
            self._group: Group | None = None
            self._defer_seconds = defer_seconds
            lock_path = writer_lock_path(make_url(url).database or "")
            self._writer = WriterLock(lock_path) if lock_path else None
            self._writers_waiting = 0
            """Write transactions of this process waiting for ``_sqlite_lock`` (they join the open group)."""
            self.sync_engine = sqlite_engine(url, sqlite_synchronous)
            # Reads have a connection of their own: in WAL mode they see what is committed, never wait for
            # a group to commit, and never make one commit early (docs/engine.md "Durable commits").
            self._read_lock = asyncio.Lock()
            self._read_engine = sqlite_engine(url, sqlite_synchronous)
            sa.event.listen(self._read_engine, "before_cursor_execute", self._count_statement)
            self._reader: sa.Connection | None = None
            """The reads' connection, kept open (a check-out and a BEGIN through SQLAlchemy cost ~100 us a read)."""
            self._write_conn: sa.Connection | None = None
            """The groups' connection, kept open the same way (``Group``)."""
        else:
            # A fixed pool: past it, callers wait for a connection instead of opening one. Overflow
            # connections are closed on return, and a new one costs about ten round trips (connect,
            # auth, type codecs) plus preparing every statement again: a burst of 100 runs opened 20
            # of them and ran at 124-165 runs/s against 193-262 with none. Nothing in Flowdeck holds a
            # connection while it waits for another, so waiting cannot deadlock.
            self.engine = create_async_engine(
                url,
                pool_size=pool_size,
                max_overflow=0,
                connect_args={"server_settings": {"application_name": application_name}},
                json_serializer=json_dumps,
                json_deserializer=json_loads,
            )
            self.sync_engine = self.engine.sync_engine
            sa.event.listen(self.sync_engine, "connect", mark_fresh)
            sa.event.listen(self.sync_engine, "connect", note_started_at)
            self._spares = SpareConnections(self.engine)
            """Bare connections kept between check-outs instead of given back to the pool at once."""
            self._wal = WalFlusher(self.flush_wal, delay=wal_flush_seconds, lost=self._lose)
            self._flush_statement = compile_statement(sa.text(FLUSH_SQL), is_sqlite=False, returns_rows=True)
        self.loss_listeners: list[Callable[[BaseException], None]] = []
        """Called when early-released decisions were lost, or may have been (PostgreSQL restarted before
        their WAL flush)."""
        sa.event.listen(self.sync_engine, "before_cursor_execute", self._count_statement)
        sa.event.listen(self.sync_engine, "begin", self._count_round_trip)
        sa.event.listen(self.sync_engine, "rollback", self._count_round_trip)
        sa.event.listen(self.sync_engine, "commit", self._count_commit)

    def insert(self, table: sa.Table) -> Any:
        """A dialect insert with ``on_conflict_do_nothing`` / ``on_conflict_do_update`` available."""
        return sqlite.insert(table) if self.is_sqlite else postgresql.insert(table)

    @asynccontextmanager
    async def transaction(self, *, defer: bool = False) -> AsyncIterator[Connection]:
        """A transaction that commits when the block ends (it returns once the writes are durable) and
        rolls back if it raises.

        ``defer``: return before the writes are durable (SQLite: as soon as they are in the open group,
        before its commit; PostgreSQL: an asynchronous commit), the early release above; the
        connection's ``committed`` future says when they are durable.
        """
        if not self.is_sqlite:
            async with self._postgres(transaction="write", early_release=defer) as conn:
                yield conn
            return
        self._writers_waiting += 1
        try:
            await self._sqlite_lock.acquire()
        finally:
            self._writers_waiting -= 1
        try:
            group = self._group
            if group is None:
                group = self._group = await self._open_group()
            raw = group.raw  # savepoints on sqlite3 itself: microseconds
            raw.execute("SAVEPOINT flowdeck_member")
            self.counter.round_trips += 2
            done = False
            member = InlineConnection(group.conn, self.counter)
            try:
                yield member
                done = True
            finally:
                if done:
                    group.members += 1
                else:
                    raw.execute("ROLLBACK TO flowdeck_member")
                raw.execute("RELEASE flowdeck_member")
                if done and defer:
                    group.released += 1
                    member.committed = group.committed
                    if group.timer is None and group.flush is None:
                        loop = asyncio.get_running_loop()
                        group.timer = loop.call_later(self._defer_seconds, self._commit_soon, group)
                if group.members >= GROUP_LIMIT or (not self._writers_waiting and self._contended()):
                    # another process waits for the write lock: it gets it now, not after the nodes this
                    # one would run with the group open (unless this one's next writers are already queued)
                    self._commit_group()
                elif not defer:  # commit at the next turn: the writes ready by then join first
                    self._commit_soon(group)
        finally:
            self._sqlite_lock.release()
        if defer:
            if group.committed.done():
                group.committed.result()  # committed at the limit: raises if that commit failed
            return
        await asyncio.shield(group.committed)

    def _contended(self) -> bool:
        """Whether another process waits for the write lock; ``False`` if that cannot be told (the wait
        file could not be opened: the write that asks has succeeded, and the group commits as before)."""
        if self._writer is None:
            return False
        try:
            return self._writer.contended()
        except OSError:
            return False

    async def _open_group(self) -> Group:
        """A new group, begun once this process holds the writer lock (``storage/sqlite_writer_lock.py``)."""
        if self._writer is not None:
            asked_at = time.perf_counter()
            if await self._writer.acquire():
                self.counter.write_lock_wait_seconds += time.perf_counter() - asked_at
        try:
            conn = self._write_conn
            if conn is None or conn.closed or conn.invalidated:
                # SQLAlchemy opens and ends no transaction on it: the group's BEGIN and COMMIT go to sqlite3
                conn = self._write_conn = self.sync_engine.connect().execution_options(isolation_level="AUTOCOMMIT")
            group = Group(conn)
            self.counter.round_trips += 1
            return group
        except BaseException:
            if self._writer is not None:
                self._writer.release()
            raise

    async def settle(self) -> None:
        """Wait until every early-released write is durable (before an effect outside the engine)."""
        if not self.is_sqlite:
            await self._wal.settle()
            return
        group = self._group
        if group is not None and group.released:
            self._commit_soon(group)
            await asyncio.shield(group.committed)

    def commit_soon(self) -> None:
        """Commit the open group at the next turn of the event loop (nothing more will join it soon);
        PostgreSQL: flush the WAL past the early-released commits now."""
        if not self.is_sqlite:
            self._wal.flush_soon()
        elif self._group is not None:
            self._commit_soon(self._group)

    @property
    def reads_see_released(self) -> bool:
        """Whether a read sees early-released writes at once (PostgreSQL: they are committed, only not yet
        flushed); SQLite's reads see them once their group commits."""
        return not self.is_sqlite

    async def flush_wal(self) -> Any:
        """PostgreSQL: flush the WAL past every commit that returned so far, whichever connection made it;
        returns when the PostgreSQL that did it started (storage/pg_durability.py)."""
        async with self._postgres(transaction=None) as conn:  # a read's retries: it changes nothing
            return (await conn.execute(self._flush_statement, {})).one()[1]

    def _lose(self, error: BaseException) -> None:
        for lost in self.loss_listeners:
            lost(error)

    def _commit_soon(self, group: Group) -> None:
        if group.flush is None and self._group is group:
            group.flush = asyncio.get_running_loop().create_task(self._flush(group))

    async def _flush(self, group: Group) -> None:
        async with self._sqlite_lock:  # behind the writers already waiting: they join the group first
            if self._group is group:
                self._commit_group()

    def _commit_group(self) -> None:
        """Commit the open SQLite transaction (the lock held) and tell its members how it went."""
        group, self._group = self._group, None
        if group is None:
            return
        if group.timer is not None:
            group.timer.cancel()
        try:
            self.counter.round_trips += 1
            self.counter.commits += 1
            group.commit()
        except Exception as exc:  # noqa: BLE001 -- every member raises it from its own await
            group.committed.set_exception(exc)
            group.committed.exception()  # retrieved here: each member raises it from its own await
            if group.released:
                log.error("a group commit with %d early-released decisions failed: they are lost", group.released)
                for lost in self.loss_listeners:
                    lost(exc)
        else:
            group.committed.set_result(None)
        finally:
            self.counter.write_lock_held_seconds += time.perf_counter() - group.opened_at
            if self._writer is not None:
                self._writer.release()

    @asynccontextmanager
    async def read(self, *, snapshot: bool = True) -> AsyncIterator[Connection]:
        """A connection for reads (never committed).

        ``snapshot=False`` is for a single statement: on PostgreSQL it runs without a transaction
        around it, which saves the BEGIN and ROLLBACK round trips.
        """
        if self.is_sqlite:
            async with self._read_lock:
                reader = self._reader
                if reader is None or reader.closed or reader.invalidated:
                    # SQLAlchemy opens and ends no transaction on it: BEGIN and ROLLBACK go to sqlite3 directly
                    reader = self._reader = self._read_engine.connect().execution_options(isolation_level="AUTOCOMMIT")
                raw = reader.connection.driver_connection
                assert raw is not None
                if snapshot:  # a deferred transaction: every statement in it reads the same snapshot
                    raw.execute("BEGIN")
                    self.counter.round_trips += 2
                try:
                    yield InlineConnection(reader, self.counter)
                finally:
                    if raw.in_transaction:
                        raw.execute("ROLLBACK")
        else:
            async with self._postgres(transaction="read" if snapshot else None) as conn:
                yield conn

    @asynccontextmanager
    async def autocommit(self, *, early_release: bool = False) -> AsyncIterator[Connection]:
        """A connection for one statement that is atomic by itself, run without BEGIN and COMMIT round
        trips (PostgreSQL only: SQLite has no data-modifying CTEs to make such statements of).

        ``early_release``: the statement commits asynchronously (``pg_durability.ASYNC_COMMIT_SQL`` in
        it); ``committed`` on the connection says when it is durable once the block ends."""
        if self.is_sqlite:
            raise RuntimeError("single-statement writes are a PostgreSQL path (SQLite has no data-modifying CTEs)")
        async with self._postgres(transaction=None, reads=False) as conn:
            yield conn
            if early_release:
                conn.committed = self._wal.released(started_at(conn.pooled))

    @asynccontextmanager
    async def _postgres(
        self, *, transaction: Literal["write", "read"] | None, reads: bool = True, early_release: bool = False
    ) -> AsyncIterator[AsyncpgConnection]:
        """A pooled connection, in a transaction (committed for "write", rolled back for "read") or none.

        Public APIs only: SQLAlchemy runs in autocommit mode (it opens no transaction) and the
        transaction is asyncpg's, on the driver connection SQLAlchemy hands out. BEGIN and COMMIT
        (or ROLLBACK) are one round trip each, as with SQLAlchemy's own transaction.

        A connection PostgreSQL closed (a restart, a failover, ``pg_terminate_backend``) is never handed
        out (``_open``). ``reads`` (a read, or a statement without a transaction that only reads): a
        statement that loses its connection runs again on a fresh one. A write transaction that loses
        its connection after BEGIN raises: it never committed, and the caller decides whether to take
        it again (docs/engine.md "Lost connections"); one that loses it at COMMIT may have committed.
        """
        conn, raw, tx, fresh = await self._open(transaction, early_release)

        async def reopen() -> tuple[PooledConnection, Any, bool]:
            nonlocal conn, raw, tx
            await conn.discard()
            conn, raw, tx, again = await self._open(transaction)
            return conn, raw, again

        wrapped = AsyncpgConnection(
            conn,
            raw,
            self.counter,
            None if transaction == "write" else reopen,
            reads=reads and transaction != "write",
            fresh=fresh,
            patience=self.reconnect_seconds,
        )
        track = write_track.get()
        try:
            if tx is None:
                if track is not None and not reads:
                    track.committed = True  # a write without a transaction: done once sent
                yield wrapped
                return
            self.counter.round_trips += 2  # BEGIN, and COMMIT or ROLLBACK
            try:
                yield wrapped
            except BaseException as exc:
                with contextlib.suppress(Exception):
                    await tx.rollback()
                if track is not None and transaction == "write" and is_disconnect(exc):
                    track.lost = True
                raise
            if transaction == "write":
                self.counter.commits += 1
                await commit(tx, track)
                if early_release and not wrapped.durable_commit:
                    wrapped.committed = self._wal.released(started_at(conn))
            else:
                try:
                    await tx.rollback()
                except Exception as exc:  # a read that lost its connection after its last statement: done
                    if not is_disconnect(exc):
                        raise
        finally:
            if raw.is_closed() or raw.is_in_transaction():  # never pool a connection mid-transaction
                await shielded(conn.discard())
            elif conn.bare:  # kept for the next check-out (storage/pg_spares.py), or back to the pool
                await self._spares.give_back(conn)
            else:
                await shielded(conn.release())

    async def _open(
        self, transaction: Literal["write", "read"] | None, early_release: bool = False
    ) -> tuple[PooledConnection, Any, Any, bool]:
        """A pooled connection in autocommit mode, its transaction begun if asked, that PostgreSQL has not
        closed, and whether it was opened for this check-out (``fresh``) rather than taken from the pool.

        asyncpg sees a connection close as soon as PostgreSQL closes it (it always reads its socket), so
        a pooled connection that was terminated is known dead for free (no ping round trip): it is
        dropped and the next one tried, at once and without counting, however many the pool holds. A
        BEGIN that fails on a lost connection is taken again on a fresh one (nothing was sent but the
        BEGIN). While PostgreSQL refuses connections (a restart, a failover, "too many clients") this
        waits, with a back-off from 50 ms to 1 s, up to ``reconnect_seconds``, then raises.
        """
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.reconnect_seconds
        failures = 0  # of new connections (a connection refused, or one that was lost at once)
        while True:
            conn: PooledConnection | None = None
            fresh = True
            try:
                conn = await self._spares.check_out()
                fresh = bool(conn.info.pop(FRESH, False))
                raw = conn.driver
                assert raw is not None
                if raw.is_closed():
                    raise asyncpg.ConnectionDoesNotExistError("the pooled connection was closed by PostgreSQL")
                tx = None
                if transaction is not None:
                    # early release: its COMMIT returns before the WAL is flushed (storage/pg_durability.py);
                    # a read's transaction only ever rolls back
                    tx = WriteTransaction(raw, early_release=early_release)
                    await tx.start()
                return conn, raw, tx, fresh
            except BaseException as exc:  # a cancelled task too: the connection is never left checked out
                if conn is not None:
                    await shielded(conn.discard())
                if not isinstance(exc, Exception) or not (is_disconnect(exc) or refused(exc)):
                    raise
                if not fresh:
                    continue  # a pooled connection PostgreSQL closed: the next one, at once
                if loop.time() >= deadline:
                    waited = f"FLOWDECK_DB_RECONNECT_SECONDS ({self.reconnect_seconds:g} s)"
                    raise DatabaseUnavailableError(f"PostgreSQL took no connection for {waited}: {exc}") from exc
                failures += 1
                if failures == 1:
                    log.warning("PostgreSQL closed or refused the connection (%s); trying again", exc)
                if failures >= 2:
                    pause = min(0.05 * 2 ** (failures - 2), BACKOFF_LIMIT)
                    await asyncio.sleep(min(pause, max(0.0, deadline - loop.time())))

    async def reclaim_space(self, pages: int) -> int:
        """SQLite: hand up to ``pages`` free pages back to the file system (``auto_vacuum=INCREMENTAL``)
        and return how many are still free; when fewer than ``pages`` are, checkpoint the WAL so the file
        shrinks now.
        A thousand pages take about 15 ms: the pruner calls it in steps. PostgreSQL: 0 (its
        autovacuum reuses the space)."""
        if not self.is_sqlite:
            return 0
        async with self._sqlite_lock:
            self._commit_group()  # the pragma runs outside any transaction
            if self._writer is not None:
                await self._writer.acquire()
            try:
                return reclaim_pages(self.sync_engine, pages)
            finally:
                if self._writer is not None:
                    self._writer.release()

    async def create_all(self) -> None:
        """Create the schema without migrations (tests only; ``flowdeck migrate`` uses Alembic)."""
        async with self.transaction() as conn:
            await conn.run_sync(metadata.create_all)

    async def dispose(self) -> None:
        if self.is_sqlite:
            self._commit_group()  # a group whose commit was still due
            if self._write_conn is not None:
                self._write_conn.close()
                self._write_conn = None
            self.sync_engine.dispose()
            if self._reader is not None:
                self._reader.close()
                self._reader = None
            self._read_engine.dispose()
            if self._writer is not None:
                self._writer.close()
        else:
            await self._wal.close()  # what was released early is flushed before the pool closes
            await self._spares.close()
            await self.engine.dispose()

    def _count_statement(self, _conn: Any, _cursor: Any, statement: str, *_: Any) -> None:
        if not statement.startswith("BEGIN"):  # SQLite's BEGIN is a statement; the begin event counts it
            self.counter.round_trips += 1

    def _count_round_trip(self, conn: sa.Connection, *_: Any) -> None:
        if conn.get_execution_options().get("isolation_level") != "AUTOCOMMIT":  # else nothing is sent
            self.counter.round_trips += 1

    def _count_commit(self, *_: Any) -> None:
        self.counter.round_trips += 1
        self.counter.commits += 1
