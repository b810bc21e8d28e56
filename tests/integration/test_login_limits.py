"""The login rate limit counts failures in the database: every API process sees the same ones."""

from __future__ import annotations

import pytest

from flowdeck.accounts.rate_limit import LoginLimits, LoginRateLimiter, RateLimitedError
from flowdeck.storage.database import Database

LIMITS = LoginLimits(window_seconds=60, per_email=3, per_address=5)


class Clock:
    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


async def test_failures_counted_by_one_process_limit_another(db: Database) -> None:
    clock = Clock()
    first, second = LoginRateLimiter(db, LIMITS, clock), LoginRateLimiter(db, LIMITS, clock)
    for limiter in (first, second, first):
        await limiter.check("eve@example.com", "10.0.0.1")
        await limiter.failed("eve@example.com", "10.0.0.1")
    with pytest.raises(RateLimitedError) as refused:
        await second.check("eve@example.com", "10.0.0.2")  # the email is spent, whatever the address
    assert refused.value.retry_after == 60
    await second.check("bob@example.com", "10.0.0.1")  # the address still has 2 of 5 left


async def test_failures_leave_the_window_and_a_correct_login_clears_the_email(db: Database) -> None:
    clock = Clock()
    limiter = LoginRateLimiter(db, LIMITS, clock)
    for _ in range(3):
        await limiter.failed("eve@example.com", "10.0.0.1")
    clock.now += 30
    with pytest.raises(RateLimitedError) as refused:
        await limiter.check("eve@example.com", "10.0.0.9")
    assert refused.value.retry_after == 30  # until the oldest failure leaves the window
    clock.now += 31
    await limiter.check("eve@example.com", "10.0.0.9")
    for _ in range(3):
        await limiter.failed("ann@example.com", "10.0.0.3")
    await limiter.succeeded("ann@example.com")
    await limiter.check("ann@example.com", "10.0.0.4")


async def test_the_address_limit_holds_across_emails(db: Database) -> None:
    limiter = LoginRateLimiter(db, LIMITS, Clock())
    for n in range(5):
        await limiter.failed(f"user{n}@example.com", "10.0.0.7")
    with pytest.raises(RateLimitedError):
        await limiter.check("someone.new@example.com", "10.0.0.7")
