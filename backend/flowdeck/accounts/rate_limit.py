"""Login rate limiting: failed attempts counted per email and per client address, in a sliding window.

In memory, per process: a single ``flowdeck serve`` sees every login. A deployment with several API
processes gets a limit per process (still a hard ceiling on guessing speed).
"""

from __future__ import annotations

import math
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

__all__ = ("LoginLimits", "LoginRateLimiter", "RateLimitedError")


class RateLimitedError(Exception):
    def __init__(self, retry_after: float) -> None:
        super().__init__("too many failed login attempts; try again later")
        self.retry_after = max(1, math.ceil(retry_after))


@dataclass(frozen=True, slots=True)
class LoginLimits:
    window_seconds: float = 900.0
    per_email: int = 10
    per_address: int = 50


class LoginRateLimiter:
    def __init__(self, limits: LoginLimits | None = None, clock: Callable[[], float] = time.monotonic) -> None:
        self.limits = limits or LoginLimits()
        self._clock = clock
        self._failures: dict[str, deque[float]] = {}

    def check(self, email: str, address: str) -> None:
        """Raise ``RateLimitedError`` when either key has used up its failures in the window."""
        now = self._clock()
        for key, limit in ((f"e:{email}", self.limits.per_email), (f"a:{address}", self.limits.per_address)):
            failures = self._recent(key, now)
            if len(failures) >= limit:
                raise RateLimitedError(failures[0] + self.limits.window_seconds - now)

    def failed(self, email: str, address: str) -> None:
        now = self._clock()
        for key in (f"e:{email}", f"a:{address}"):
            self._failures.setdefault(key, deque()).append(now)
        if len(self._failures) > 100_000:  # bound memory under a spray of distinct emails
            self._prune(now)

    def succeeded(self, email: str) -> None:
        self._failures.pop(f"e:{email}", None)

    def _recent(self, key: str, now: float) -> deque[float]:
        failures = self._failures.get(key)
        if failures is None:
            return deque()
        while failures and failures[0] <= now - self.limits.window_seconds:
            failures.popleft()
        if not failures:
            del self._failures[key]
        return failures

    def _prune(self, now: float) -> None:
        for key in list(self._failures):
            self._recent(key, now)
