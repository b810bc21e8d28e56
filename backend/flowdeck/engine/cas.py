"""The compare-and-swap every decision of a run takes, and its retry loop.

A decision reads the instance version, claims the next one and only then writes; everything commits
together. A decision that loses the CAS rolls back and runs again on fresh state. This process's own
decisions of one run queue on a lock first, so they don't lose the CAS to each other (on PostgreSQL
a loser has already waited for the winner's commit); the CAS still decides between processes. A
decision that lost its database connection runs again the same way (docs/engine.md "Lost connections").
"""

from __future__ import annotations

import asyncio
import functools
import logging
from collections import OrderedDict
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import TypeVar

from flowdeck.domain.statuses import TERMINAL_RUN_STATUSES, RunStatus
from flowdeck.engine.effects import Announcer, Effects, Held
from flowdeck.engine.plans import RunNotFoundError
from flowdeck.storage.disconnects import is_disconnect
from flowdeck.storage.pg_durability import OutcomeUnknownError
from flowdeck.storage.state import StateManager, StateTransaction

__all__ = ("Cas", "DecideFn", "DuplicateDeliveryError", "KnownVersions")

T = TypeVar("T")

log = logging.getLogger(__name__)

_LOST_CONNECTION_RETRIES = 3
"""A decision whose connection PostgreSQL closed is taken again this many times at most (then the
node's lease brings it back)."""

DecideFn = Callable[[StateTransaction, RunStatus, Effects], Awaitable[T]]
"""A decision: given the transaction, the run's status (the CAS won) and the effects to fill."""


class DuplicateDeliveryError(Exception):
    """This result was delivered before: roll back, change nothing."""


class KnownVersions:
    """The instance versions this process committed last, for the most recent runs (bounded)."""

    _LIMIT = 10_000

    def __init__(self) -> None:
        self._versions: OrderedDict[str, int] = OrderedDict()

    def get(self, instance_id: str) -> int | None:
        return self._versions.get(instance_id)

    def remember(self, instance_id: str, version: int) -> None:
        self._versions[instance_id] = version
        self._versions.move_to_end(instance_id)
        if len(self._versions) > self._LIMIT:
            self._versions.popitem(last=False)

    def saw(self, instance_id: str, version: int) -> None:
        """``version`` was the run's at some moment (a claim read it): known from then on, unless this
        process has committed a later one since (versions only grow). Stale, it costs a one-statement step
        that writes nothing, after which the general decision takes the result."""
        if version > self._versions.get(instance_id, -1):
            self.remember(instance_id, version)

    def forget(self, instance_id: str) -> None:
        self._versions.pop(instance_id, None)

    def clear(self) -> None:
        self._versions.clear()


@dataclass(slots=True)
class _RunLock:
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    users: int = 0


class Cas:
    """Takes decisions under the compare-and-swap and announces their effects once committed."""

    def __init__(self, state: StateManager, announce: Announcer) -> None:
        self.state = state
        self.announce = announce
        self.recheck: Callable[[Effects, Held], None] | None = None
        """Given the effects of an early-released decision whose outcome is unknown (PostgreSQL restarted
        before its WAL flush) and its place in the order: settles it with what of them the database shows."""
        self.versions = KnownVersions()
        self._run_locks: dict[str, _RunLock] = {}

    async def decide(self, instance_id: str, decision: DecideFn[T]) -> T | None:
        """Take ``decision`` for the run, after this process's other decisions of it."""
        async with self.serialized(instance_id):
            return await self.decide_now(instance_id, decision)

    @asynccontextmanager
    async def serialized(self, instance_id: str) -> AsyncIterator[None]:
        """Hold this process's lock of the run."""
        lock = self._run_locks.get(instance_id)
        if lock is None:
            lock = self._run_locks[instance_id] = _RunLock()
        lock.users += 1
        try:
            async with lock.lock:
                yield
        finally:
            lock.users -= 1
            if not lock.users:
                del self._run_locks[instance_id]

    async def decide_now(self, instance_id: str, decision: DecideFn[T], *, defer: bool = False) -> T | None:
        """Take ``decision`` under the CAS (the caller holds the run's lock in this process), again on fresh
        state when PostgreSQL closed its connection. ``None`` when it found a duplicate delivery.

        ``defer``: return before the decision is durable (early release, storage/database.py), for a
        worker going on with the node it leased; its effects are announced once it is durable.
        """
        lost = 0
        while True:
            try:
                async with self.state.transaction(defer=defer) as tx:
                    effects = Effects(tx.now)
                    version, status = await self._claim_version(tx, instance_id)
                    result = await decision(tx, status, effects)
                    if defer and effects.run_status in TERMINAL_RUN_STATUSES:
                        await tx.commit_durably()  # a run's end is never seen before it is durable
            except DuplicateDeliveryError:
                return None
            except Exception as exc:
                self.versions.forget(instance_id)
                if not is_disconnect(exc) or lost >= _LOST_CONNECTION_RETRIES:
                    raise
                # PostgreSQL closed the connection: the decision is taken again on fresh state. Safe even
                # if it was lost at COMMIT and did commit: its log writes find the duplicate delivery.
                lost += 1
                log.warning("a decision of run %s lost its database connection; taking it again", instance_id)
                continue
            except BaseException:
                self.versions.forget(instance_id)
                raise
            self.versions.remember(instance_id, version + 1)
            self.announce_once_durable(tx.committed, instance_id, effects)
            return result

    def announce_once_durable(self, committed: asyncio.Future[None] | None, instance_id: str, effects: Effects) -> None:
        """Announce a decision's effects now (``committed`` is ``None`` or done: it is durable) or once its
        early-released writes are (storage/database.py)."""
        if committed is None or (committed.done() and not committed.cancelled() and committed.exception() is None):
            self.announce(effects)
        else:
            settled = functools.partial(
                self._settled, instance_id=instance_id, effects=effects, held=self.announce.hold()
            )
            committed.add_done_callback(settled)

    def _settled(self, commit: asyncio.Future[None], instance_id: str, effects: Effects, held: Held) -> None:
        """An early-released decision became durable (announce it), failed to commit (it is lost: SQLite),
        or may have been lost (PostgreSQL restarted: announce what the database shows of it)."""
        if not commit.cancelled() and commit.exception() is None:
            self.announce.settle(held, effects)
            return
        self.versions.forget(instance_id)
        if isinstance(commit.exception(), OutcomeUnknownError) and self.recheck is not None:
            self.recheck(effects, held)
        else:
            self.announce.settle(held, None)

    @staticmethod
    async def _claim_version(tx: StateTransaction, instance_id: str) -> tuple[int, RunStatus]:
        """The compare-and-swap: take the instance's next version; returns (old version, status).

        It compares nothing: the decision reads the run after it, under the row's lock, so whatever
        another process decided before is what it reads. (Comparing with the version this process last
        committed cost a failed update, a read and another update whenever another process had moved
        the run on: several processes finishing nodes of one wide fan-out did so at nearly every node.)
        """
        taken = await tx.take_next_version(instance_id)
        if taken is None:
            raise RunNotFoundError(f"run {instance_id} does not exist")
        status, version = taken
        return version, status
