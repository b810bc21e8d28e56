"""Who listens to which run's node updates, across processes: the fan-out sends a node update only to the
processes that have a live client watching its run (``engine/fanout.py`` carries the messages).

Each process keeps the whole registry in memory, told over the fan-out's shared topic:

- a process whose client starts watching a run (the first on that process) announces ``watch`` and waits
  until every other live process has acknowledged it (at most ``ack_seconds``) before the client reads
  the run's snapshot: an update a process published before it knew is then already in that snapshot,
  and every later one is sent (subscribe, then snapshot: no gap). A process that acknowledges only after
  that wait may have published updates after the snapshot that it did not send: its late acknowledgement
  calls ``late`` (the fan-out's gap: this process's clients read their runs again);
- the last client leaving announces ``unwatch``;
- every process announces itself every ``heartbeat_seconds`` with its whole watch list; a process not
  heard for ten heartbeats is taken for dead and its watches vanish (a clean stop says so at once);
- a process starting says ``hello`` and every other answers with its heartbeat at once. Its fan-out's
  start returns only after a heartbeat and a half (the ``grace``: by then every live process was heard),
  before its engine runs anything; should an update be published in the grace all the same, it goes to
  every process.

A watch of ``None`` is every run (``flowdeck run``'s progress, tests).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable, Iterable

__all__ = ("ALL_RUNS", "Watches")

_MISSED_HEARTBEATS = 10
"""A process not heard for this many heartbeats is taken for dead (a stall of a loaded process is not)."""

_LATE_WATCHES = 1_000
"""Watches still waiting for a late acknowledgement that are remembered (the oldest are forgotten)."""

ALL_RUNS = "*"
"""On the wire, a watch of every run (run ids never contain ``*``)."""


def wire(instance_id: str | None) -> str:
    return ALL_RUNS if instance_id is None else instance_id


class Watches:
    """The registry of one process. ``announce(body)`` sends a message on the shared topic (it may not wait)."""

    def __init__(
        self,
        origin: str,
        announce: Callable[[dict[str, object]], None],
        *,
        heartbeat_seconds: float = 0.5,
        ack_seconds: float = 2.0,
        clock: Callable[[], float] = time.monotonic,
        late: Callable[[], None] | None = None,
    ) -> None:
        self.origin = origin
        self.heartbeat_seconds = heartbeat_seconds
        self.ack_seconds = ack_seconds
        self._announce = announce
        self._clock = clock
        self._started = clock()
        self._grace_over = False
        self._local: dict[str, int] = {}
        """Runs watched here (``*``: all) -> how many of this process's clients watch it."""
        self._ready: dict[str, asyncio.Future[None]] = {}
        """Runs whose watch is announced but not yet acknowledged by every live process."""
        self._acks: dict[int, set[str]] = {}
        self._pending: dict[int, tuple[set[str], asyncio.Future[None]]] = {}
        self._late: dict[int, set[str]] = {}
        """Watches whose wait ended before these processes acknowledged them (``late`` is called when one does)."""
        self._late_ack = late
        self._seq = 0
        self._alive: dict[str, float] = {}
        """Other processes -> until when they count as alive."""
        self._remote: dict[str, set[str]] = {}
        """Run (``*``: all) -> the other processes watching it."""
        self._by_origin: dict[str, set[str]] = {}
        self._taken_for_dead: set[str] = set()
        """Processes expired for silence (not those that said goodbye): one heard again missed updates."""
        self._quiet: set[str] = set()
        """Other processes that want no run end but a failed one (``flowdeck worker``: no client waits there)."""

    def begin(self) -> None:
        """The fan-out started listening now: the grace counts from here."""
        self._started = self._clock()
        self._grace_over = False

    # -- this process's clients ------------------------------------------------------------------------
    async def watch(self, instance_id: str | None) -> None:
        """From when this returns, every process sends this one the run's node updates (every run's: None)."""
        run = wire(instance_id)
        self._local[run] = self._local.get(run, 0) + 1
        if self._local[run] == 1 and run not in self._ready:
            self._seq += 1
            self._acks[self._seq] = set()
            self._announce({"watch": [run], "seq": self._seq})
            self._ready[run] = asyncio.ensure_future(self._confirmed(self._seq))
        confirming = self._ready.get(run)
        if confirming is None:
            return
        try:
            await asyncio.shield(confirming)
        finally:
            if confirming.done() and self._ready.get(run) is confirming:
                del self._ready[run]

    async def _confirmed(self, seq: int) -> None:
        """Until every other live process acknowledged watch ``seq`` (at most ``ack_seconds`` after this
        process knows them all: in its start-up grace it may not yet)."""
        try:
            if self.grace_left() > 0:
                await asyncio.sleep(self.grace_left())
            waiting = {origin for origin in self._alive if self._is_alive(origin)} - self._acks[seq]
            if waiting:
                ready = asyncio.get_running_loop().create_future()
                self._pending[seq] = (waiting, ready)
                with contextlib.suppress(TimeoutError):
                    # A process that does not answer in time is busy or dying: what it sends later still
                    # comes, and its late acknowledgement says it may have left some out (``late``).
                    await asyncio.wait_for(ready, self.ack_seconds)
                if waiting:
                    self._late[seq] = waiting
                    while len(self._late) > _LATE_WATCHES:
                        del self._late[next(iter(self._late))]
        finally:
            self._pending.pop(seq, None)
            self._acks.pop(seq, None)

    def unwatch(self, instance_id: str | None) -> None:
        run = wire(instance_id)
        count = self._local.get(run, 0) - 1
        if count > 0:
            self._local[run] = count
            return
        if self._local.pop(run, None) is not None:
            self._announce({"unwatch": [run]})

    @property
    def watched(self) -> list[str]:
        return list(self._local)

    # -- what the other processes said -------------------------------------------------------------------
    def heard(self, origin: str) -> bool:
        """Any message from ``origin``: it is alive. ``True`` when it had been taken for dead (a stall, a
        lost connection): node updates of runs it watches were not sent to it meanwhile."""
        self._alive[origin] = self._clock() + _MISSED_HEARTBEATS * self.heartbeat_seconds
        if origin in self._taken_for_dead:
            self._taken_for_dead.discard(origin)
            return True
        return False

    def add(self, origin: str, runs: Iterable[str], *, replace: bool = False) -> None:
        """Record ``origin``'s watches (``replace``: they are all it watches)."""
        if replace:
            self._drop_watches(origin)
        mine = self._by_origin.setdefault(origin, set())
        for run in runs:
            if isinstance(run, str):
                mine.add(run)
                self._remote.setdefault(run, set()).add(origin)

    def hears_ends(self, origin: str, *, every: bool) -> None:
        """Whether ``origin`` wants every run's end (``every``) or only the failed ones (said in its heartbeats)."""
        if every:
            self._quiet.discard(origin)
        else:
            self._quiet.add(origin)

    def remove(self, origin: str, runs: Iterable[str]) -> None:
        mine = self._by_origin.get(origin, set())
        for run in runs:
            mine.discard(run)
            watchers = self._remote.get(run)
            if watchers is not None:
                watchers.discard(origin)
                if not watchers:
                    del self._remote[run]

    def acknowledged(self, origin: str, seq: int) -> None:
        late = self._late.get(seq)
        if late is not None and origin in late:
            late.discard(origin)
            if not late:
                del self._late[seq]
            if self._late_ack is not None:
                self._late_ack()
            return
        acks = self._acks.get(seq)
        if acks is not None:
            acks.add(origin)
        entry = self._pending.get(seq)
        if entry is not None:
            entry[0].discard(origin)
            if not entry[0]:
                self._settle(seq)

    def gone(self, origin: str) -> None:
        """``origin`` stopped (or was not heard for too long): its watches vanish, no ack is awaited from it."""
        self._alive.pop(origin, None)
        self._quiet.discard(origin)
        self._drop_watches(origin)
        for seq, (waiting, _) in list(self._pending.items()):
            waiting.discard(origin)
            if not waiting:
                self._settle(seq)
        for seq, late in list(self._late.items()):
            late.discard(origin)
            if not late:
                del self._late[seq]

    def awaiting(self) -> set[str]:
        """The processes whose acknowledgement of a watch this process waits for now."""
        return {origin for waiting, _ in self._pending.values() for origin in waiting}

    # -- the sender's questions ----------------------------------------------------------------------------
    def watched_elsewhere(self, instance_id: str) -> bool:
        """Whether another process may watch this run (asked of every update as it is published: a dict
        lookup; a process that died keeps its watches here until it is taken for dead)."""
        remote = self._remote
        return instance_id in remote or ALL_RUNS in remote

    def targets(self, instance_id: str) -> set[str]:
        """The live processes that want this run's node updates."""
        found = self._remote.get(instance_id, set()) | self._remote.get(ALL_RUNS, set())
        return {origin for origin in found if self._is_alive(origin)}

    def taken_for_dead(self, origin: str) -> bool:
        """``origin`` went silent and was forgotten (``expire``); it is told so when heard again (``heard``)."""
        return origin in self._taken_for_dead

    def alive(self) -> set[str]:
        """The other processes alive now."""
        return {origin for origin in self._alive if self._is_alive(origin)}

    def end_listeners(self) -> set[str]:
        """The live processes that want every run's end (a process that did not say otherwise does)."""
        return self.alive() - self._quiet

    def others_alive(self) -> bool:
        return any(self._is_alive(origin) for origin in self._alive)

    def grace_left(self) -> float:
        """How long this process may not yet have heard every live process (it started a moment ago)."""
        return max(0.0, 1.5 * self.heartbeat_seconds - (self._clock() - self._started))

    @property
    def in_grace(self) -> bool:
        """Asked of every update published: once over, the grace stays over (until ``begin``)."""
        if self._grace_over:
            return False
        if self.grace_left() > 0:
            return True
        self._grace_over = True
        return False

    def expire(self) -> None:
        """Forget the processes not heard for ten heartbeats."""
        now = self._clock()
        for origin, until in list(self._alive.items()):
            if until < now:
                self.gone(origin)
                self._taken_for_dead.add(origin)

    # -- inside ---------------------------------------------------------------------------------------------
    def _is_alive(self, origin: str) -> bool:
        until = self._alive.get(origin)
        return until is not None and until >= self._clock()

    def _drop_watches(self, origin: str) -> None:
        self.remove(origin, list(self._by_origin.pop(origin, ())))

    def _settle(self, seq: int) -> None:
        entry = self._pending.pop(seq, None)
        if entry is None:
            return
        ready = entry[1]
        if not ready.done():
            ready.set_result(None)
