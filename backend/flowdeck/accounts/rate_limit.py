"""Login rate limiting: attempts counted per email and per client address, in a window of 15 minutes.

An attempt is counted *before* its password is checked, by one atomic statement (``storage/rate_counters.py``),
so parallel attempts cannot all slip through between a check and a count: with a limit of 10, no more than
10 passwords of one email are ever checked in a window, however many requests arrive at once. A correct
login clears its email's count and gives back its address's attempt, so only failures use up the limits.
The counters are in the database: every API process counts the same attempts.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass

from flowdeck.storage.database import Database
from flowdeck.storage.rate_counters import RateCounters

__all__ = ("LoginLimits", "LoginRateLimiter", "RateLimitedError")


class RateLimitedError(Exception):
    def __init__(self, retry_after: float, message: str = "too many failed login attempts; try again later") -> None:
        super().__init__(message)
        self.retry_after = max(1, math.ceil(retry_after))


@dataclass(frozen=True, slots=True)
class LoginLimits:
    window_seconds: float = 900.0
    per_email: int = 10
    per_address: int = 50


class LoginRateLimiter:
    def __init__(self, db: Database, limits: LoginLimits | None = None, clock: Callable[[], float] = time.time) -> None:
        self.counters = RateCounters(db)
        self.limits = limits or LoginLimits()
        self._clock = clock

    @staticmethod
    def _email(email: str) -> str:
        return f"login:e:{email}"

    @staticmethod
    def _address(address: str) -> str:
        return f"login:a:{address}"[:400]

    async def attempt(self, email: str, address: str) -> None:
        """Count an attempt; ``RateLimitedError`` (and no password check) when it is over a limit."""
        now, window = self._clock(), self.limits.window_seconds
        limits = {self._email(email): self.limits.per_email, self._address(address): self.limits.per_address}
        counts = await self.counters.hit(dict.fromkeys(limits, window), now)
        over = [counts[key].resets_at for key, limit in limits.items() if counts[key].count > limit]
        if over:
            # A parallel attempt that read the clock a moment before the window's opener would count past
            # the window's end: never more than the window.
            raise RateLimitedError(min(max(over) - now, window))

    async def failed(self) -> None:
        """A wrong password (its attempt stays counted): a moment to drop counters whose window ended."""
        await self.counters.prune(self._clock())

    async def succeeded(self, email: str, address: str) -> None:
        await self.counters.clear(self._email(email))
        await self.counters.give_back(self._address(address))
