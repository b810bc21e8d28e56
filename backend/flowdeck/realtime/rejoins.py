"""After a gap in the live updates from other processes, every run a connection follows is joined again.

A gap is the fan-out saying updates may have been missed (``LocalPublisher.missed``: its connection to
PostgreSQL or Redis was lost and it listens again, or another process could not send for a while). The
runs' rooms then show what they were last sent, maybe a node still running that finished meanwhile, with
no later update to come. Joining again sends each follower a fresh snapshot, exactly as after a
reconnect of its own (the page already takes a snapshot at any time), and updates published meanwhile
are held back and sent only if the snapshot does not show them yet (``RunRelay``).

Gaps come in bursts (a PostgreSQL restart is one per process): they are taken one round at a time, and
those that arrive during a round make one more. A join that fails (PostgreSQL still away) is tried again
in the next round, for up to ``patience`` seconds.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Hashable, Iterable
from typing import Generic, TypeVar

__all__ = ("Rejoins",)

log = logging.getLogger(__name__)

Follower = TypeVar("Follower", bound=Hashable)
"""Whatever is shown somewhere and can be sent again: (connection, run) for a run's page, a widget's room."""


class Rejoins(Generic[Follower]):
    def __init__(
        self,
        followed: Callable[[], Iterable[Follower]],
        rejoin: Callable[[Follower], Awaitable[None]],
        *,
        retry_seconds: float = 0.5,
        patience: float = 30.0,
    ) -> None:
        """``followed``: what is followed now; ``rejoin``: send one of them a fresh view (it raises when it
        could not, and is then tried again)."""
        self._followed = followed
        self._rejoin = rejoin
        self._retry_seconds = retry_seconds
        self._patience = patience
        self._task: asyncio.Task[None] | None = None
        self._again = False
        self.rounds = 0

    def gap(self) -> None:
        if self._task is not None and not self._task.done():
            self._again = True
            return
        self._task = asyncio.get_running_loop().create_task(self._rounds(), name="flowdeck-live-rejoins")

    async def stop(self) -> None:
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)

    async def _rounds(self) -> None:
        loop = asyncio.get_running_loop()
        give_up = loop.time() + self._patience
        failed: list[Follower] = []
        while True:
            self._again = False
            self.rounds += 1
            failed = await self._round(list(dict.fromkeys([*self._followed(), *failed])))
            if not failed and not self._again:
                return
            if failed:
                if loop.time() >= give_up:
                    log.warning("%d followers could not be sent a fresh view: %s", len(failed), failed[:5])
                    return
                await asyncio.sleep(self._retry_seconds)

    async def _round(self, followers: list[Follower]) -> list[Follower]:
        failed = []
        for follower in followers:
            try:
                await self._rejoin(follower)
            except Exception as exc:  # noqa: BLE001 -- the database still away: the next round tries again
                log.info("could not send %s a fresh view yet (%s)", follower, exc)
                failed.append(follower)
        return failed
