"""Retry backoff (SPEC §2): ``backoffSeconds * 2^(attempt-1)``, capped, plus up to 10% jitter."""

from __future__ import annotations

import random

from flowdeck.domain.definition import RetryPolicy

__all__ = ("backoff_seconds",)

_jitter = random.Random()  # noqa: S311 -- jitter, not cryptography


def backoff_seconds(policy: RetryPolicy, failed_attempt: int, *, jitter: bool = True) -> float:
    """The wait before the attempt after ``failed_attempt`` (1 = the first attempt just failed)."""
    base = policy.backoff_seconds * 2 ** (failed_attempt - 1)
    capped = min(base, policy.max_backoff_seconds)
    return float(capped * (1 + _jitter.uniform(0, 0.1)) if jitter else capped)
