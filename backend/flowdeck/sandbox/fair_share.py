"""Who gets the next sandbox process, and when the pool grows past its floor or shrinks back to it.

The rules (``pool.SandboxPool`` applies them; this module is bookkeeping only: no processes, no clock
of its own, so the rules are tested without timing):

* Every call waits in its tenant's line. A free process goes to the waiting tenant holding the fewest
  processes, ties to the one served longest ago: tenants are served in turn, not first come, first
  served, so a tenant with a long backlog does not push a newcomer to the back.
* One tenant holds at most ``share`` processes at a time (the pool's floor, ``FLOWDECK_SANDBOX_WORKERS``).
* A tenant that waits while holding none ("starving": every process is held by others) gets a process
  of its own started for it, up to ``ceiling`` (``FLOWDECK_SANDBOX_MAX_WORKERS``) processes in all.
* A process idle for ``idle_seconds`` stops while the pool is above its floor.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final, Generic, TypeVar

__all__ = ("NO_TENANT", "PoolBounds", "TenantLines")

W = TypeVar("W")

NO_TENANT: Final = ""
"""The line of calls that name no tenant (benchmarks, ``flowdeck run``): they share one."""


@dataclass(frozen=True, slots=True)
class PoolBounds:
    floor: int
    """Processes kept running even when idle; also the most one tenant holds at a time."""
    ceiling: int
    """The most processes at once, grown ones included."""
    idle_seconds: float
    """How long a process above the floor may stay idle before it stops."""

    def __post_init__(self) -> None:
        if self.floor < 1:
            raise ValueError("a sandbox pool needs at least one worker")
        if self.ceiling < self.floor:
            raise ValueError(f"the most sandbox workers ({self.ceiling}) is below the floor ({self.floor})")
        if self.idle_seconds <= 0:
            raise ValueError("idle_seconds must be positive")

    def to_start(self, *, live: int, starting: int, starving: int) -> int:
        """How many processes to start now for tenants that wait while holding none.

        ``live``: processes in service (busy or idle); ``starting``: processes on their way, each of
        which will serve a starving tenant first (it holds the fewest).
        """
        wanted = starving - starting
        room = self.ceiling - live - starting
        return max(0, min(wanted, room))

    def to_stop(self, *, live: int, idle_for: Sequence[float]) -> int:
        """How many of the idle processes (``idle_for``: seconds each has been idle) to stop now."""
        long_idle = sum(1 for seconds in idle_for if seconds >= self.idle_seconds)
        return max(0, min(long_idle, live - self.floor))


class TenantLines(Generic[W]):
    """Per-tenant waiting lines of ``W`` (the pool's futures) and the processes each tenant holds."""

    def __init__(self, share: int) -> None:
        if share < 1:
            raise ValueError("share must be at least 1")
        self.share = share
        self._lines: dict[str, deque[W]] = {}
        self._held: dict[str, int] = {}
        self._served: dict[str, int] = {}
        """tenant -> the turn it last got a process (a newcomer has none: it goes first among equals)."""
        self._turn = 0

    def held(self, tenant: str) -> int:
        return self._held.get(tenant, 0)

    @property
    def waiting(self) -> int:
        return sum(len(line) for line in self._lines.values())

    def may_take(self, tenant: str) -> bool:
        return self.held(tenant) < self.share

    def starving(self) -> int:
        """Tenants that wait while holding no process."""
        return sum(1 for tenant, line in self._lines.items() if line and not self.held(tenant))

    def join(self, tenant: str, waiter: W) -> None:
        self._lines.setdefault(tenant, deque()).append(waiter)

    def leave(self, tenant: str, waiter: W) -> bool:
        """Take ``waiter`` out of its line (it gave up); False if it is not in it (already served)."""
        line = self._lines.get(tenant)
        if line is None or waiter not in line:
            return False
        line.remove(waiter)
        self._forget(tenant)
        return True

    def take(self, tenant: str) -> None:
        """``tenant`` got a process without waiting."""
        self._held[tenant] = self.held(tenant) + 1
        self._turn += 1
        self._served[tenant] = self._turn

    def give_back(self, tenant: str) -> None:
        held = self.held(tenant) - 1
        if held > 0:
            self._held[tenant] = held
        else:
            self._held.pop(tenant, None)
            self._forget(tenant)

    def next_in_turn(self) -> tuple[str, W] | None:
        """The waiter that gets the next free process (counted as held), or None if no one may take one."""
        candidates = [tenant for tenant, line in self._lines.items() if line and self.may_take(tenant)]
        if not candidates:
            return None
        tenant = min(candidates, key=lambda t: (self.held(t), self._served.get(t, 0)))
        waiter = self._lines[tenant].popleft()
        self.take(tenant)
        self._forget(tenant)
        return tenant, waiter

    def drain(self) -> list[W]:
        """Every waiter, out of its line (the pool is closing)."""
        waiters = [waiter for line in self._lines.values() for waiter in line]
        self._lines.clear()
        return waiters

    def _forget(self, tenant: str) -> None:
        """Drop a tenant's entries once it neither waits nor holds anything (tenants come and go)."""
        if not self._lines.get(tenant):
            self._lines.pop(tenant, None)
            if not self.held(tenant):
                self._served.pop(tenant, None)
