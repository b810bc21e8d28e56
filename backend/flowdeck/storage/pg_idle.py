"""PostgreSQL connections kept checked out between statements (storage/database.py).

Checking a connection out of SQLAlchemy's pool and back in costs about 100 us of CPU on the 2-core
machine (the async engine's greenlet hops, the pool's bookkeeping, the isolation level set on the way
out and reset on the way back): as much as a hot statement's own round trip, and the chain step is one
statement per node. A connection given back clean (no transaction open on it, none of SQLAlchemy's,
not closed) waits here instead, in autocommit mode, and the next statement takes it at once.

The pool still bounds the connections: the idle ones stay checked out of it, and one is taken from
here before the pool is asked, so the pool is asked only when none is idle. While a caller waits in
the pool for a connection (all of them busy), connections given back go to the pool, where it gets
one at once.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

__all__ = ("IdleConnections",)


class IdleConnections:
    def __init__(self) -> None:
        self._idle: list[tuple[AsyncConnection, Any]] = []
        self.waiting = 0
        """Callers waiting for a connection from the pool (``connect``)."""

    def __len__(self) -> int:
        return len(self._idle)

    def take(self) -> tuple[AsyncConnection, Any] | None:
        """The connection given back last (its statements are the most likely to be prepared), or ``None``.
        The caller checks it is still open (``Database._open``)."""
        return self._idle.pop() if self._idle else None

    async def connect(self, engine: AsyncEngine) -> AsyncConnection:
        """A connection from the pool (none was idle), counted as waiting until it comes."""
        self.waiting += 1
        try:
            return await engine.connect()
        finally:
            self.waiting -= 1

    def in_use(self, engine: AsyncEngine) -> int:
        """Connections checked out of the pool and not idle here (tests wait for none)."""
        return int(engine.pool.checkedout()) - len(self._idle)  # type: ignore[attr-defined]

    def keep(self, conn: AsyncConnection, raw: Any) -> bool:
        """Keep a connection its user is done with; ``False``: give it back to the pool instead."""
        if self.waiting or raw.is_closed() or raw.is_in_transaction() or conn.in_transaction() or conn.invalidated:
            return False
        self._idle.append((conn, raw))
        return True

    def drain(self) -> list[AsyncConnection]:
        """All the idle connections, for the pool (before it closes)."""
        idle, self._idle = self._idle, []
        return [conn for conn, _ in idle]
