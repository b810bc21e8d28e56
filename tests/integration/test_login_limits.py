"""The login rate limit, as an attacker tries it: attempts are counted in the database before the password is
checked, so parallel guesses cannot outrun the count and every API process sees the same attempts."""

from __future__ import annotations

import asyncio

import pytest
from argon2 import PasswordHasher

from flowdeck.accounts.passwords import PasswordService
from flowdeck.accounts.rate_limit import LoginLimits, LoginRateLimiter, RateLimitedError
from flowdeck.accounts.service import AccountsService, InvalidCredentialsError
from flowdeck.storage.database import Database

LIMITS = LoginLimits(window_seconds=60, per_email=3, per_address=5)
PASSWORD = "correct horse battery staple"


class Clock:
    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


class CountingPasswords(PasswordService):
    """The password check, counted: how many guesses an attacker actually got checked."""

    def __init__(self) -> None:
        super().__init__(PasswordHasher(time_cost=1, memory_cost=64, parallelism=1))
        self.checked = 0

    async def verify(self, password_hash: str | None, password: str) -> bool:
        self.checked += 1
        return await super().verify(password_hash, password)


async def test_forty_parallel_wrong_passwords_get_at_most_ten_checked(db: Database) -> None:
    passwords = CountingPasswords()
    limiter = LoginRateLimiter(db, LoginLimits(per_email=10, per_address=1000))
    accounts = AccountsService(db, passwords, limiter)
    await accounts.create_user("victim@example.com", "acme", PASSWORD)
    passwords.checked = 0

    guesses = [accounts.login("victim@example.com", f"guess number {n}", "203.0.113.9") for n in range(40)]
    results = await asyncio.gather(*guesses, return_exceptions=True)

    assert passwords.checked <= 10
    assert sum(isinstance(r, InvalidCredentialsError) for r in results) == passwords.checked
    assert sum(isinstance(r, RateLimitedError) for r in results) == 40 - passwords.checked
    with pytest.raises(RateLimitedError):  # even the right password now waits for the window
        await accounts.login("victim@example.com", PASSWORD, "198.51.100.1")
    assert passwords.checked <= 10


async def test_attempts_counted_by_one_process_limit_another(db: Database) -> None:
    clock = Clock()
    first, second = LoginRateLimiter(db, LIMITS, clock), LoginRateLimiter(db, LIMITS, clock)
    for limiter in (first, second, first):
        await limiter.attempt("eve@example.com", "10.0.0.1")
    with pytest.raises(RateLimitedError) as refused:
        await second.attempt("eve@example.com", "10.0.0.2")  # the email is spent, whatever the address
    assert refused.value.retry_after == 60
    await second.attempt("bob@example.com", "10.0.0.1")  # the address had 4 of 5 used: this is the 5th


async def test_the_window_ends_and_a_correct_login_clears_the_email(db: Database) -> None:
    clock = Clock()
    limiter = LoginRateLimiter(db, LIMITS, clock)
    for _ in range(3):
        await limiter.attempt("eve@example.com", "10.0.0.1")
    clock.now += 30
    with pytest.raises(RateLimitedError) as refused:
        await limiter.attempt("eve@example.com", "10.0.0.9")
    assert refused.value.retry_after == 30  # until the window that began with the first attempt ends
    clock.now += 31
    await limiter.attempt("eve@example.com", "10.0.0.9")  # a new window
    for _ in range(3):
        await limiter.attempt("ann@example.com", "10.0.0.3")
    await limiter.succeeded("ann@example.com", "10.0.0.3")
    await limiter.attempt("ann@example.com", "10.0.0.4")


async def test_the_address_limit_holds_across_emails_and_correct_logins_do_not_use_it(db: Database) -> None:
    limiter = LoginRateLimiter(db, LIMITS, Clock())
    for n in range(10):  # ten correct logins from one office address
        await limiter.attempt(f"colleague{n}@example.com", "10.0.0.7")
        await limiter.succeeded(f"colleague{n}@example.com", "10.0.0.7")
    for n in range(5):
        await limiter.attempt(f"user{n}@example.com", "10.0.0.7")
    with pytest.raises(RateLimitedError):
        await limiter.attempt("someone.new@example.com", "10.0.0.7")


async def test_retry_after_never_exceeds_the_window_when_a_parallel_attempt_read_the_clock_earlier(
    db: Database,
) -> None:
    clock = Clock()
    limiter = LoginRateLimiter(db, LIMITS, clock)
    for _ in range(LIMITS.per_email):
        await limiter.attempt("ada@example.test", "10.0.0.1")  # the first one opened the window at 1,000,000
    clock.now -= 0.4  # an attempt whose request read the clock before the window's opener did
    with pytest.raises(RateLimitedError) as limited:
        await limiter.attempt("ada@example.test", "10.0.0.1")
    assert limited.value.retry_after == LIMITS.window_seconds  # 60, not 61
