"""A clock that moves only when the test moves it (the engine, the worker and the scheduler take one)."""

from __future__ import annotations


class FakeClock:
    def __init__(self, now: float = 1_000_000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds
