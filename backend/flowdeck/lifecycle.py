"""Signals for long-running commands: the first SIGTERM/SIGINT asks for a graceful stop, the second hurries it."""

from __future__ import annotations

import asyncio
import signal
from collections.abc import Callable

__all__ = ("StopSignals",)


class StopSignals:
    """``await signals.first()`` returns at the first signal; a later one calls every ``on_second`` callback."""

    def __init__(self) -> None:
        self._stop = asyncio.Event()
        self.on_second: list[Callable[[], None]] = []
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, self._received)

    def _received(self) -> None:
        if self._stop.is_set():
            for call in self.on_second:
                call()
        self._stop.set()

    async def first(self) -> None:
        await self._stop.wait()
