"""Login rate limiting: failed attempts counted per email and per client address, in a sliding window.

The failures are rows of ``login_failures`` in the database, so every API process (several
``flowdeck serve`` behind a load balancer) counts the same ones. Only failures are written; a
correct login costs one indexed read.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass

import sqlalchemy as sa

from flowdeck.storage.account_tables import login_failures
from flowdeck.storage.database import Database

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
    def __init__(self, db: Database, limits: LoginLimits | None = None, clock: Callable[[], float] = time.time) -> None:
        self.db = db
        self.limits = limits or LoginLimits()
        self._clock = clock

    def _keys(self, email: str, address: str) -> dict[str, int]:
        return {f"e:{email}": self.limits.per_email, f"a:{address}": self.limits.per_address}

    async def check(self, email: str, address: str) -> None:
        """Raise ``RateLimitedError`` when either key has used up its failures in the window."""
        now = self._clock()
        limits = self._keys(email, address)
        stmt = (
            sa.select(login_failures.c.key, sa.func.count(), sa.func.min(login_failures.c.at))
            .where(login_failures.c.key.in_(list(limits)), login_failures.c.at > now - self.limits.window_seconds)
            .group_by(login_failures.c.key)
        )
        async with self.db.read() as conn:
            rows = (await conn.execute(stmt)).all()
        for key, count, first in rows:
            if count >= limits[key]:
                raise RateLimitedError(first + self.limits.window_seconds - now)

    async def failed(self, email: str, address: str) -> None:
        now = self._clock()
        async with self.db.transaction() as conn:
            await conn.execute(login_failures.insert(), [{"key": k, "at": now} for k in self._keys(email, address)])
            # Failures older than the window count for nothing: drop them (the index on ``at`` finds them).
            await conn.execute(login_failures.delete().where(login_failures.c.at <= now - self.limits.window_seconds))

    async def succeeded(self, email: str) -> None:
        async with self.db.transaction() as conn:
            await conn.execute(login_failures.delete().where(login_failures.c.key == f"e:{email}"))
