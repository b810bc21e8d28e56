"""Early release on PostgreSQL: a worker's decisions commit without waiting for their WAL flush, and are
known durable once a later synchronous commit has flushed the WAL past them.

Each node of a chain waited for the fsync of its decision's COMMIT, about 1.2 ms of a node's 2.5 on these
machines (docs/benchmarks.md "Where a PostgreSQL chain node's wall time goes"). A decision the worker goes
on from (``Database.transaction(defer=True)``, the one-statement chain and iteration steps) commits with
``synchronous_commit = off`` for that transaction alone: other sessions see it at once, as any commit,
but it may be lost if PostgreSQL crashes before its WAL is written. So, as on SQLite, nothing built on it
leaves the process until it is durable: its effects are announced, and a handler with outside effects
runs, only once a *flush* has covered it. A flush is one statement (``FLUSH_SQL``) that writes a WAL
record and is committed synchronously: PostgreSQL flushes its WAL up to that commit, so past every commit
that returned before the flush was sent, whichever connection made it. Commits that return while no flush is under way
wait in the open *batch*; its flush is sent ``delay`` after its first member, at once when someone waits
for it (``settle``), or when the worker has nothing more to add (``flush_soon``).

A flush that fails is sent again (on a new connection, with a back-off up to a second) until one is
answered: meanwhile PostgreSQL is away, and what waits for the flush waits with it. The statement also
reads when PostgreSQL's postmaster started, as each connection did when it was opened
(``STARTED_AT_SQL``): if every commit of the batch was made on a connection to the PostgreSQL the flush
reached, the server never went down in between and the batch's WAL was there to flush. If not,
PostgreSQL restarted in between: a clean shutdown writes the WAL, a crash loses what was not written, and
nothing says which. The batch's outcome is then *unknown*: its future fails with ``OutcomeUnknownError``,
the database's ``loss_listeners`` are told (the worker drops what it built on it, as after SQLite's failed
group commit; the leases bring the nodes back), and the engine announces of its effects only what the
database then shows durably (engine/recheck.py).
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import logging
from collections.abc import Awaitable, Callable

__all__ = ("OutcomeUnknownError", "WalFlusher")

log = logging.getLogger(__name__)

STARTED_AT_SQL = "SELECT pg_postmaster_start_time()"
"""Read once per connection, when it is opened: which start of PostgreSQL it talks to."""

FLUSH_SQL = "SELECT pg_logical_emit_message(true, 'flowdeck', ''), pg_postmaster_start_time()"
"""Committed synchronously (the session's default) and waits for the WAL to be flushed up to its commit,
because it wrote a WAL record (a transactional logical message, which any role may write: about 60
bytes). A transaction that wrote none commits without that wait whatever ``synchronous_commit`` says,
even one that took a transaction id (PostgreSQL's xact.c ``RecordTransactionCommit``): this statement was
``SELECT pg_current_xact_id()`` until the chaos suite found decisions announced after such a "flush" and
lost in a crash; tests/integration/test_pg_early_release.py holds the flush to the WAL position. Also
says which start of PostgreSQL answered."""

ASYNC_COMMIT_SQL = "set_config('synchronous_commit', 'off', true)"
"""In a statement run without a transaction: its implicit transaction commits asynchronously (the
setting is local to it and read at its commit). One of the statement's rows must evaluate it."""


class OutcomeUnknownError(Exception):
    """PostgreSQL restarted before a flush covered these early-released commits: they may be lost."""


class WalFlusher:
    def __init__(
        self,
        flush: Callable[[], Awaitable[datetime.datetime]],
        *,
        delay: float,
        lost: Callable[[BaseException], None],
    ) -> None:
        """``flush``: runs ``FLUSH_SQL`` (taken again on a new connection when PostgreSQL closes one) and
        returns the postmaster's start time; ``lost``: told once per batch whose outcome is unknown."""
        self._flush = flush
        self._delay = delay
        self._lost = lost
        self._open: asyncio.Future[None] | None = None
        """The batch of commits that returned since the last flush was sent."""
        self._open_on: set[datetime.datetime | None] = set()
        """The PostgreSQL starts the open batch's commits were made on."""
        self._timer: asyncio.TimerHandle | None = None
        self._in_flight: set[asyncio.Future[None]] = set()
        self._tasks: set[asyncio.Task[None]] = set()
        self._closing = False
        self.flushes = 0

    def released(self, started_at: datetime.datetime | None) -> asyncio.Future[None]:
        """An early-released commit just returned, made on a connection to the PostgreSQL started at
        ``started_at`` (``None``: not known): the future of the flush that will cover it."""
        self._open_on.add(started_at)
        batch = self._open
        if batch is None:
            batch = self._open = asyncio.get_running_loop().create_future()
            self._timer = asyncio.get_running_loop().call_later(self._delay, self.flush_soon)
        return batch

    def flush_soon(self) -> None:
        """Send the open batch's flush now (nothing more will join it soon)."""
        batch, self._open = self._open, None
        made_on, self._open_on = self._open_on, set()
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if batch is None:
            return
        self._in_flight.add(batch)
        task = asyncio.get_running_loop().create_task(self._settle_batch(batch, made_on), name="flowdeck-wal-flush")
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def settle(self) -> None:
        """Wait until every early-released commit so far is durable (raises if one's outcome is unknown)."""
        self.flush_soon()
        waiting = list(self._in_flight)
        if waiting:
            await asyncio.shield(asyncio.gather(*waiting))

    @property
    def pending(self) -> bool:
        return self._open is not None or bool(self._in_flight)

    async def close(self, patience: float = 5.0) -> None:
        """Flush what is pending (the engine stopped; the pool closes next). Flushes are sent again until
        answered: with PostgreSQL away, stop after ``patience`` seconds (what was pending is then unknown, as
        after a crash of this process)."""
        with contextlib.suppress(Exception):
            await asyncio.wait_for(self.settle(), patience)
        self._closing = True
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        self._closing = False  # every flush has ended: a later one (the database used again) is sent as before

    async def _settle_batch(self, batch: asyncio.Future[None], made_on: set[datetime.datetime | None]) -> None:
        try:
            started_at = await self._flush_until_answered()
            if made_on != {started_at}:
                self._unknown(batch, OutcomeUnknownError(f"PostgreSQL restarted (at {started_at:%H:%M:%S})"))
            elif not batch.done():
                batch.set_result(None)
        except BaseException as exc:  # cancelled (the process stops): its members never learn more
            self._unknown(batch, OutcomeUnknownError(f"the WAL flush was stopped: {exc!r}"))
            raise
        finally:
            self._in_flight.discard(batch)

    async def _flush_until_answered(self) -> datetime.datetime:
        failures = 0
        while True:
            try:
                started_at = await self._flush()
            except Exception as exc:
                if self._closing:  # close() cancelled this flush and the cancellation was lost (Python 3.11's
                    raise  # wait_for loses one that arrives as the call it awaits ends): sent again, it never ends
                failures += 1
                if failures == 1:
                    log.warning("the WAL flush failed (%s); sending it again until PostgreSQL answers", exc)
                await asyncio.sleep(min(0.05 * 2**failures, 1.0))
                continue
            self.flushes += 1
            if failures:
                log.warning("the WAL flush was answered after %d failed attempts", failures)
            return started_at

    def _unknown(self, batch: asyncio.Future[None], error: OutcomeUnknownError) -> None:
        if batch.done():
            return
        log.error("early-released decisions may be lost: %s", error)
        batch.set_exception(error)
        batch.exception()  # retrieved here: each waiter raises it from its own await
        self._lost(error)
