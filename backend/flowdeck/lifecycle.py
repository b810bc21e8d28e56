"""Signals for long-running commands: the first SIGTERM/SIGINT asks for a graceful stop, the second hurries it."""

from __future__ import annotations

import asyncio
import signal
from collections.abc import Callable

__all__ = ("StopRequests", "StopSignals")


class StopRequests:
    """``await requests.first()`` returns at the first stop request; a later one calls every ``on_second``."""

    def __init__(self) -> None:
        self._stop = asyncio.Event()
        self.on_second: list[Callable[[], None]] = []

    def _received(self) -> None:
        if self._stop.is_set():
            for call in self.on_second:
                call()
        self._stop.set()

    async def first(self) -> None:
        await self._stop.wait()


class StopSignals(StopRequests):
    """Stop requests from SIGINT and SIGTERM."""

    def __init__(self) -> None:
        super().__init__()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, self._received)
