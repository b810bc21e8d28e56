"""uvicorn for ``flowdeck serve``: the first SIGTERM/SIGINT starts a graceful shutdown, the second ends the drain."""

from __future__ import annotations

from collections.abc import Callable
from types import FrameType

import uvicorn

__all__ = ("DrainingServer",)


class DrainingServer(uvicorn.Server):
    def __init__(self, config: uvicorn.Config, hurry: Callable[[], None]) -> None:
        super().__init__(config)
        self._hurry = hurry

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        if self.should_exit:  # uvicorn already shuts down: the engine's drain is what still waits
            self._hurry()
        super().handle_exit(sig, frame)
