"""``flowdeck serve``: uvicorn whose first SIGTERM/SIGINT starts a graceful shutdown and whose second ends the
drain, and the engine worker processes beside it (``--workers N``), told the same."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Generator
from types import FrameType

import uvicorn

from flowdeck.settings import Settings
from flowdeck.worker_processes import WorkerProcesses

__all__ = ("DrainingServer", "serve_worker_count", "serve_worker_processes")


class DrainingServer(uvicorn.Server):
    """``children``: worker processes told ``stop`` at the first signal and ``hurry`` at the second, and
    waited for once serve itself has drained (killed ``children_grace`` seconds after the first signal)."""

    def __init__(
        self,
        config: uvicorn.Config,
        hurry: Callable[[], None],
        children: WorkerProcesses | None = None,
        children_grace: float = 40.0,
    ) -> None:
        super().__init__(config)
        self._hurry = hurry
        self._children = children
        self._children_grace = children_grace

    @contextlib.contextmanager
    def capture_signals(self) -> Generator[None, None, None]:
        # uvicorn re-raises the signal it handled when this ends (SIGTERM then ends the process at once):
        # the children are waited for before that, with the signal handlers still in place.
        with super().capture_signals():
            try:
                yield
            finally:
                if self._children is not None:
                    self._children.stop(timeout=self._children_grace)

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        if self.should_exit:  # uvicorn already shuts down: the engine's drain is what still waits
            self._hurry()
        if self._children is not None:
            self._children.order("hurry" if self.should_exit else "stop")
        super().handle_exit(sig, frame)


def serve_worker_count(settings: Settings, requested: int | None) -> int:
    """How many worker processes ``serve`` starts: ``--workers``, else FLOWDECK_SERVE_WORKERS, else one per
    core beyond the first on PostgreSQL and none on SQLite.

    On SQLite only Redis carries the nodes a worker process runs to the browsers connected to ``serve``
    (there is no LISTEN/NOTIFY), so worker processes there need FLOWDECK_REDIS_URL.
    """
    count = requested if requested is not None else settings.serve_workers
    if count is None:
        return 0 if settings.is_sqlite else max(0, (os.cpu_count() or 1) - 1)
    if count < 0:
        raise ValueError(f"--workers must be at least 0, got {count}")
    if count and settings.is_sqlite and not settings.redis_url:
        raise ValueError(
            f"{count} worker process(es) on SQLite need FLOWDECK_REDIS_URL: without it the nodes they run never "
            "reach the editor live (SQLite has no LISTEN/NOTIFY). Set FLOWDECK_REDIS_URL, use PostgreSQL, "
            "or run with --workers 0 (the default on SQLite)"
        )
    return count


def serve_worker_processes(count: int, echo: Callable[[str], None]) -> WorkerProcesses:
    """``count`` supervised ``flowdeck worker`` processes with serve's environment (FLOWDECK_METRICS_PORT
    left out: each would bind the same port; ``serve`` answers ``/metrics`` itself)."""
    env = {k: v for k, v in os.environ.items() if k != "FLOWDECK_METRICS_PORT"}
    return WorkerProcesses(count, env=env, echo=echo)
