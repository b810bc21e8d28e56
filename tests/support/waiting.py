"""Waiting in tests for the event that proves something, instead of sleeping a fixed time and hoping."""

from __future__ import annotations

import asyncio
import inspect
import time
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

T = TypeVar("T")


async def until(
    probe: Callable[[], T | Awaitable[T]],
    accept: Callable[[T], Any] = bool,
    *,
    timeout: float = 15.0,
    every: float = 0.05,
    what: str = "the condition",
) -> T:
    """Call ``probe`` (plain or async) until ``accept`` holds for what it returns, and return that value.

    Fails after ``timeout`` seconds naming ``what`` and the last value seen, so a red test says what never came.
    """
    deadline = time.monotonic() + timeout
    while True:
        value = probe()
        if inspect.isawaitable(value):
            value = await value
        if accept(value):  # type: ignore[arg-type]
            return value  # type: ignore[return-value]
        if time.monotonic() >= deadline:
            raise AssertionError(f"waited {timeout:g} s for {what}; last seen: {value!r:.3000}")
        await asyncio.sleep(every)
