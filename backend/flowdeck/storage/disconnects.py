"""Telling a lost PostgreSQL connection from a failed statement (storage/database.py retries on the first).

A connection is lost when PostgreSQL restarts, fails over, is told ``pg_terminate_backend``, or a
firewall cuts it. What is retried where: docs/engine.md "Lost connections".
"""

from __future__ import annotations

import uuid
from contextvars import ContextVar
from dataclasses import dataclass, field

import asyncpg  # type: ignore[import-untyped]
import sqlalchemy as sa

__all__ = (
    "DatabaseUnavailableError",
    "TransactionNotCommittedError",
    "WriteTrack",
    "is_disconnect",
    "own_mark",
    "refused",
    "unsent",
    "write_track",
)


@dataclass(slots=True)
class WriteTrack:
    """What the writes of one unit of work (an API request: api/replay.py) did, as ``Database`` saw them."""

    committed: bool = False
    """A write committed, or may have: its COMMIT, or a statement without a transaction, was sent."""
    lost: bool = False
    """A write transaction lost its connection before its COMMIT was sent (so it never committed)."""
    unknown: bool = False
    """A write transaction lost its connection during its COMMIT: whether it committed is not known."""
    recognises_own: bool = False
    """The unit of work tells a commit of its own (marked with ``key``) when it runs again, so running it
    again after an ``unknown`` COMMIT is safe (storage/waits.py: a resume)."""
    key: str = field(default_factory=lambda: uuid.uuid4().hex)
    """The unit of work's own mark: the same when it runs again."""

    @property
    def runs_again(self) -> bool:
        """Running the unit of work again is safe and is what happens (api/replay.py): a write that lost its
        connection before its COMMIT and nothing committed before it, or a COMMIT cut off in a unit of
        work that recognises its own commit."""
        return (self.lost and not self.committed) or (self.unknown and self.recognises_own)


write_track: ContextVar[WriteTrack | None] = ContextVar("flowdeck_write_track", default=None)


def own_mark() -> str | None:
    """The mark a unit of work writes with its rows so that, run again after a COMMIT whose answer was lost,
    it recognises them as its own (``None`` outside an API request). Asking for it promises to."""
    track = write_track.get()
    if track is None:
        return None
    track.recognises_own = True
    return track.key


class DatabaseUnavailableError(ConnectionError):
    """PostgreSQL took no connection for FLOWDECK_DB_RECONNECT_SECONDS (the API answers 503)."""


_DISCONNECTED = (
    asyncpg.PostgresConnectionError,  # ConnectionDoesNotExistError: "closed in the middle of operation"
    asyncpg.AdminShutdownError,  # pg_terminate_backend, a fast shutdown
    asyncpg.CrashShutdownError,
    asyncpg.CannotConnectNowError,  # "the database system is starting up / shutting down"
    asyncpg.IdleSessionTimeoutError,  # FATAL 57P05: the server closed a connection idle past idle_session_timeout
    asyncpg.IdleInTransactionSessionTimeoutError,  # FATAL 25P03: idle_in_transaction_session_timeout
    ConnectionError,  # reset, refused, broken pipe
)


def is_disconnect(exc: BaseException) -> bool:
    """Whether ``exc`` says the connection to PostgreSQL is gone (not that a statement was wrong), or
    that asyncpg would not use it because PostgreSQL's closing message came first (``unsent``).

    Raw asyncpg errors (the compiled statements) and SQLAlchemy's wrapped ones (its
    ``connection_invalidated``, or the asyncpg error it wraps) alike.
    """
    for seen in _causes(exc):
        if isinstance(seen, sa.exc.DBAPIError) and seen.connection_invalidated:
            return True
        if isinstance(seen, _DISCONNECTED) or _closed(seen):
            return True
    return unsent(exc)


def _causes(exc: BaseException) -> list[BaseException]:
    """``exc`` and what it wraps: SQLAlchemy's error -> its adapter's error -> asyncpg's."""
    chain: list[BaseException] = []
    seen: BaseException | None = exc
    while seen is not None and len(chain) < 5:
        chain.append(seen)
        seen = getattr(seen, "orig", None) or seen.__cause__
    return chain


def _closed(exc: BaseException) -> bool:
    """asyncpg's check before it sends: "cannot call PreparedStatement.fetch(): the underlying connection is closed"."""
    return isinstance(exc, asyncpg.InterfaceError) and "connection is closed" in str(exc)


class TransactionNotCommittedError(Exception):
    """PostgreSQL did not commit what a transaction wrote: it had been aborted (a statement failed in it,
    its COMMIT answered ROLLBACK) or had ended before its COMMIT (storage/pg_connection.py
    ``WriteTransaction``). Nothing of it was written, like a transaction whose connection was lost before
    its COMMIT: it is taken again the same way."""


_NOT_RUN = (
    TransactionNotCommittedError,
    asyncpg.InternalClientError,  # "cannot switch to state ...; another operation is in progress"
    asyncpg.IdleSessionTimeoutError,  # the server was idle (outside a transaction) when it closed: it read nothing
    asyncpg.IdleInTransactionSessionTimeoutError,  # the server rolled the transaction back as it closed
)


def unsent(exc: BaseException) -> bool:
    """A lost connection that did not run what was sent (so a write did not happen, its COMMIT included):
    asyncpg noticed before sending anything (closed, or "cannot switch to state ...; another operation is
    in progress": the FATAL of a ``pg_terminate_backend`` that arrived while the connection was idle), or
    PostgreSQL's own answer says so: FATAL 57P05 (``idle_session_timeout``: the server closes only a
    session that is idle outside a transaction, before it reads anything more) or 25P03
    (``idle_in_transaction_session_timeout``: the transaction is rolled back)."""
    return any(isinstance(seen, _NOT_RUN) or _closed(seen) for seen in _causes(exc))


def refused(exc: BaseException) -> bool:
    """PostgreSQL refused a new connection for want of room: "sorry, too many clients already", or "too many
    connections for role/database" (SQLSTATE 53300). Like a server that is starting up, it is waited for
    (``Database._open``): a connection given back by another caller, or freed elsewhere, ends the wait."""
    return any(isinstance(seen, asyncpg.TooManyConnectionsError) for seen in _causes(exc))
