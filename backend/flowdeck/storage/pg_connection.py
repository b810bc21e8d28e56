"""A pooled PostgreSQL connection as the stores use it, and the helpers ``Database`` checks connections out,
commits and gives them back with (storage/database.py)."""

from __future__ import annotations

import asyncio
import datetime
import logging
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any, TypeVar

import sqlalchemy as sa
from sqlalchemy.util import await_only

from flowdeck.storage.compiled import CompiledStatement
from flowdeck.storage.disconnects import TransactionNotCommittedError, WriteTrack, is_disconnect, unsent
from flowdeck.storage.pg_checkout import PooledConnection
from flowdeck.storage.pg_durability import STARTED_AT_SQL
from flowdeck.storage.sqlite_engine import StatementCounter

T = TypeVar("T")

__all__ = (
    "BACKOFF_LIMIT",
    "FRESH",
    "AsyncpgConnection",
    "WriteTransaction",
    "commit",
    "mark_fresh",
    "note_started_at",
    "released",
    "shielded",
    "started_at",
)

log = logging.getLogger(__name__)

BACKOFF_LIMIT = 1.0
"""The longest pause between two attempts of a statement that lost its connection (from 20 ms, doubling)."""

_Reopen = Callable[[], Awaitable[tuple[PooledConnection, Any, bool]]]


class AsyncpgConnection:
    """A pooled connection whose compiled hot statements run on asyncpg directly (PostgreSQL), and whose
    other statements run through SQLAlchemy's connection on it, made at the first (storage/pg_checkout.py).

    SQLAlchemy's side of the connection is in autocommit mode, so it never opens a transaction of
    its own: ``Database`` opens one on the asyncpg connection itself (``asyncpg.Connection.transaction``),
    and both SQLAlchemy's statements and the compiled ones run inside it.

    With ``reopen``, a statement that fails because PostgreSQL closed the connection runs again on a
    fresh one: any statement of a read (reads change nothing), and a statement without a transaction
    only when it did not run (``unsent``: asyncpg refused before sending, or PostgreSQL said it closed
    an idle session). It is taken again for up to ``patience`` seconds (FLOWDECK_DB_RECONNECT_SECONDS)
    after the first loss, with a back-off between new connections; pooled connections found dead on the
    way are skipped at once (a pool whose every connection PostgreSQL closed at once, by
    ``pg_terminate_backend`` of all backends, a restart or ``idle_session_timeout``, is walked through
    and discarded, however large). ``fresh``: the connection was opened for this check-out (else it was
    pooled).
    """

    committed: asyncio.Future[None] | None = None
    durable_commit = False
    """An early-released transaction that asked to commit synchronously after all (``commit_durably``)."""

    def __init__(
        self,
        conn: PooledConnection,
        raw: Any,
        counter: StatementCounter,
        reopen: _Reopen | None = None,
        *,
        reads: bool = False,
        fresh: bool = False,
        patience: float = 15.0,
    ) -> None:
        self._conn = conn
        self._raw = raw
        self._counter = counter
        self._reopen = reopen
        self._reads = reads
        self._fresh = fresh
        self._patience = patience

    async def execute(self, statement: Any, parameters: Any = None) -> Any:
        spent = 0
        give_up: float | None = None
        while True:
            try:
                return await self._execute(statement, parameters)
            except Exception as exc:
                retry = is_disconnect(exc) if self._reads else unsent(exc)
                if self._reopen is None or not retry:
                    raise
                now = asyncio.get_running_loop().time()
                give_up = now + self._patience if give_up is None else give_up
                if self._fresh:  # a pooled connection found dead costs no wait: the next one is taken at once
                    spent += 1
                    if now >= give_up:
                        raise
                log.warning("a statement lost its PostgreSQL connection (%s); running it again on a fresh one", exc)
                if spent:
                    await asyncio.sleep(min(0.01 * 2**spent, BACKOFF_LIMIT))
                self._conn, self._raw, self._fresh = await self._reopen()

    async def _execute(self, statement: Any, parameters: Any) -> Any:
        if isinstance(statement, CompiledStatement) and isinstance(parameters, list) and len(parameters) > 1:
            statement = statement.core  # many rows: one multi-row statement through SQLAlchemy
        if not isinstance(statement, CompiledStatement):
            return await (await self._conn.sqlalchemy()).execute(statement, parameters)
        self._counter.round_trips += 1
        return await statement.run_asyncpg(self._raw, parameters)

    async def commit_durably(self) -> None:
        """This early-released transaction's COMMIT waits for its WAL flush after all: what it writes is
        never seen by another connection before it is durable (a run's end, storage/pg_durability.py)."""
        self._counter.round_trips += 1
        await self._raw.execute("SET LOCAL synchronous_commit TO ON")
        self.durable_commit = True

    async def run_sync(self, fn: Callable[[sa.Connection], T]) -> T:
        return await (await self._conn.sqlalchemy()).run_sync(fn)

    @property
    def pooled(self) -> PooledConnection:
        """The pooled connection the last statement ran on (a statement run again may have changed it)."""
        return self._conn


class WriteTransaction:
    """BEGIN … COMMIT sent as plain statements on the asyncpg connection, checking that the COMMIT committed.

    PostgreSQL answers the COMMIT of an aborted transaction with ROLLBACK and no error, and the COMMIT of
    one already ended with a warning only: either would let a caller go on (announce what it decided) with
    nothing written. So the connection must still be in the transaction when the COMMIT is sent, and its
    answer must be COMMIT, or ``TransactionNotCommittedError`` is raised. ``early_release``: the BEGIN
    carries the setting that makes the COMMIT asynchronous (storage/pg_durability.py) in its round trip
    (a ``SET LOCAL`` after it would cost one more per decision)."""

    BEGIN = "BEGIN"
    EARLY_RELEASED_BEGIN = "BEGIN; SET LOCAL synchronous_commit TO OFF"

    def __init__(self, raw: Any, *, early_release: bool = False) -> None:
        self._raw = raw
        self._begin = self.EARLY_RELEASED_BEGIN if early_release else self.BEGIN

    async def start(self) -> None:
        await self._raw.execute(self._begin)

    async def commit(self) -> None:
        if not self._raw.is_in_transaction():
            raise _not_committed("the transaction had ended before its COMMIT")
        answer = await self._raw.execute("COMMIT")
        if answer != "COMMIT":
            raise _not_committed(f"PostgreSQL answered the COMMIT with {answer}")

    async def rollback(self) -> None:
        await self._raw.execute("ROLLBACK")


def _not_committed(why: str) -> TransactionNotCommittedError:
    log.warning("a write transaction was not committed (%s); nothing of it was written", why)
    return TransactionNotCommittedError(why)


async def commit(tx: Any, track: WriteTrack | None) -> None:
    """COMMIT a write transaction. One that fails may have committed (the connection was cut while it was
    under way) unless the failure says it did not run (``unsent``): then the unit of work's write counts as
    lost, never committed, and the API runs the request again (api/replay.py). The engine takes its
    decision again either way (its log writes are idempotent: docs/engine.md "Lost connections")."""
    before = track is not None and track.committed
    if track is not None:
        track.committed = True  # from here it may have committed (a cancelled task too)
    try:
        await tx.commit()
    except Exception as exc:
        if track is not None and unsent(exc):
            track.committed, track.lost = before, True
        elif track is not None and is_disconnect(exc):
            track.unknown = True
        raise


FRESH = "flowdeck_fresh"
"""Set on a pooled connection's record when it is opened; taken off at its first check-out (``_open``)."""


def mark_fresh(_dbapi_connection: Any, record: Any) -> None:
    record.info[FRESH] = True


_STARTED_AT = "flowdeck_started_at"


def note_started_at(dbapi_connection: Any, record: Any) -> None:
    """When a connection is opened: which start of PostgreSQL it talks to (storage/pg_durability.py)."""
    # On asyncpg itself: a statement through SQLAlchemy's adapter would leave a transaction of its own open.
    record.info[_STARTED_AT] = await_only(dbapi_connection.driver_connection.fetchval(STARTED_AT_SQL))


def started_at(conn: PooledConnection) -> datetime.datetime | None:
    """When the PostgreSQL ``conn`` talks to started (``None``: not read)."""
    value = conn.info.get(_STARTED_AT)
    return value if isinstance(value, datetime.datetime) else None


async def released(conn: PooledConnection) -> None:
    """Give back a bare connection: it never suspends; were it cut short all the same, it is discarded."""
    try:
        await conn.release()
    except asyncio.CancelledError:
        await shielded(conn.discard())
        raise


async def shielded(closing: Coroutine[Any, Any, None]) -> None:
    """Give a connection back (or close it) even when the task is cancelled meanwhile, as SQLAlchemy's own
    ``async with engine.connect()`` does: a cancelled request never leaves a connection checked out."""
    await asyncio.shield(asyncio.ensure_future(closing))
