"""PostgreSQL connections kept checked out of SQLAlchemy's pool between uses, while they keep being used.

Giving a bare connection back to SQLAlchemy's pool and taking one out again costs a greenlet hop, the
pool's reset-on-return (a rollback call), its events and its queue: about 15 % of the engine's CPU in a
chain of nodes on PostgreSQL, where every node checks a connection out for its chain step (py-spy of
``flowdeck bench``'s chain). ``Database`` keeps the bare connections it would give back here instead
(last in, first out), takes the next one from here first, and hands to SQLAlchemy's pool only those
idle for ``idle_seconds``, and any while a check-out waits for the pool. The pool still bounds how many
connections there are (these count as checked out of it), and every check-out of Flowdeck's own
connections comes here first, so none waits in the pool while a kept one sits idle.
"""

from __future__ import annotations

import asyncio
from typing import Final

from sqlalchemy.ext.asyncio import AsyncEngine

from flowdeck.storage.pg_checkout import PooledConnection
from flowdeck.storage.pg_connection import released

__all__ = ("IDLE_SECONDS", "SpareConnections")

IDLE_SECONDS: Final = 1.0


class SpareConnections:
    def __init__(self, engine: AsyncEngine, idle_seconds: float = IDLE_SECONDS) -> None:
        self._engine = engine
        self.idle_seconds = idle_seconds
        self._waiting = 0
        """Check-outs waiting for SQLAlchemy's pool: a connection given back then goes to the pool, which
        hands it to the first of them (kept here, the pool's waiters would starve while others took it)."""
        self._kept: list[tuple[float, PooledConnection]] = []
        """Oldest first: ``check_out`` takes the last kept, the sweep gives back from the front."""
        self._sweep: asyncio.TimerHandle | None = None
        self._giving_back: set[asyncio.Task[None]] = set()
        self._closed = False

    def __len__(self) -> int:
        return len(self._kept)

    @property
    def waiting(self) -> int:
        """Check-outs waiting for SQLAlchemy's pool now."""
        return self._waiting

    async def check_out(self) -> PooledConnection:
        """The connection kept last (the one most likely still in PostgreSQL's and the CPU's caches), else
        one from the pool."""
        if self._kept:
            return self._kept.pop()[1]
        self._waiting += 1
        try:
            return await PooledConnection.check_out(self._engine)
        finally:
            self._waiting -= 1

    async def give_back(self, conn: PooledConnection) -> None:
        """A bare connection out of a transaction: kept for the next check-out, or to the pool when a
        check-out waits there. Keeping it never suspends; were giving it to the pool cut short by a
        cancellation, it is discarded."""
        if self._waiting or self._closed:
            await released(conn)
            return
        loop = asyncio.get_running_loop()
        self._kept.append((loop.time(), conn))
        if self._sweep is None:
            self._sweep = loop.call_later(self.idle_seconds, self._give_back_idle)

    def _give_back_idle(self) -> None:
        loop = asyncio.get_running_loop()
        now = loop.time()
        self._sweep = None
        while self._kept and now - self._kept[0][0] >= self.idle_seconds:
            self._give_back(self._kept.pop(0)[1])
        if self._kept:
            self._sweep = loop.call_later(self._kept[0][0] + self.idle_seconds - now, self._give_back_idle)

    def _give_back(self, conn: PooledConnection) -> None:
        task = asyncio.get_running_loop().create_task(released(conn))
        self._giving_back.add(task)
        task.add_done_callback(self._giving_back.discard)

    async def close(self) -> None:
        """Every kept connection back to the pool (before the pool closes), and any given back from now on."""
        self._closed = True
        if self._sweep is not None:
            self._sweep.cancel()
            self._sweep = None
        while self._kept:
            self._give_back(self._kept.pop()[1])
        if self._giving_back:
            await asyncio.gather(*self._giving_back, return_exceptions=True)
