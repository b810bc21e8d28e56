"""``flowdeck serve``: uvicorn whose first SIGTERM/SIGINT starts a graceful shutdown and whose second ends the
drain, and the engine worker processes beside it (``--workers N``), told the same."""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import Callable, Generator
from types import FrameType

import uvicorn

from flowdeck.engine.pipe_transport import ChildPipes
from flowdeck.settings import METRICS_LISTENER_VARIABLES, Settings
from flowdeck.worker_processes import WorkerProcesses

__all__ = (
    "DrainingServer",
    "children_metrics_addrs",
    "connection_share",
    "pipes_to_children",
    "pool_share",
    "serve_worker_count",
    "serve_worker_processes",
)


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
    core beyond the first on PostgreSQL and none on SQLite."""
    count = requested if requested is not None else settings.serve_workers
    if count is None:
        return 0 if settings.is_sqlite else max(0, (os.cpu_count() or 1) - 1)
    if count < 0:
        raise ValueError(f"--workers must be at least 0, got {count}")
    return count


def pipes_to_children(settings: Settings, workers: int) -> ChildPipes | None:
    """What carries live updates, wake-ups and revocations between serve and its worker processes when
    nothing else does: on SQLite without Redis (no LISTEN/NOTIFY), sockets serve holds to its children."""
    return ChildPipes() if workers and settings.is_sqlite and not settings.redis_url else None


_SPARE_CONNECTIONS = 5
"""Left free, beyond those open when serve starts, for ``psql``, migrations and the CLI."""
_FEWEST_CONNECTIONS = 2
DEDICATED_CONNECTIONS = 2
"""Held by each process beside its pool, on PostgreSQL without Redis: one LISTENs, one sends NOTIFYs
(engine/pg_notify.py)."""


def serve_worker_processes(
    count: int,
    echo: Callable[[str], None],
    pool_size: int,
    pipes: ChildPipes | None = None,
    metrics_addr: tuple[str, int] | None = None,
) -> WorkerProcesses:
    """``count`` supervised ``flowdeck worker`` processes with serve's environment, each keeping at most
    ``pool_size`` pooled database connections, each given a socket of ``pipes`` if set. ``metrics_addr``:
    serve's metrics listener; worker ``i`` listens on the ports after it (``children_metrics_addrs``)."""
    env = {k: v for k, v in os.environ.items() if k not in METRICS_LISTENER_VARIABLES}
    env["FLOWDECK_WORKER_DB_POOL_SIZE"] = str(pool_size)
    addrs = children_metrics_addrs(metrics_addr, count) if metrics_addr is not None else None
    return WorkerProcesses(
        count,
        env=env,
        echo=echo,
        channels=pipes.pair if pipes is not None else None,
        env_of=(lambda index: {"FLOWDECK_METRICS_ADDR": addrs[index]}) if addrs is not None else None,
    )


def children_metrics_addrs(serve_addr: tuple[str, int], count: int) -> list[str]:
    """The metrics listeners of serve's ``count`` worker processes: serve's host, the ports after serve's
    (``127.0.0.1:9464`` -> ``127.0.0.1:9465``, ``:9466`` ...), so every process can be scraped."""
    host, port = serve_addr
    if port + count > 65535:
        raise ValueError(
            f"FLOWDECK_METRICS_ADDR: serve's {count} worker processes listen on the ports after {port},"
            f" past 65535: choose a lower port"
        )
    shown = f"[{host}]" if ":" in host else host
    return [f"{shown}:{port + 1 + index}" for index in range(count)]


def connection_share(settings: Settings, workers: int) -> int:
    """The pool of each of serve's worker processes (``pool_share``; from the CLI)."""
    return asyncio.run(pool_share(settings, workers))


async def pool_share(settings: Settings, workers: int) -> int:
    """How many pooled connections each of ``workers`` worker processes beside serve may keep: the worker
    pool (FLOWDECK_WORKER_DB_POOL_SIZE, 4) when set or when it fits, else what PostgreSQL's ``max_connections``
    leaves once the connections already open, serve's own (its pool and 2 dedicated) and 5 spare are taken
    off, shared equally (each worker also holds 2 dedicated ones). With the defaults serve and 8 workers
    hold at most 22 + 8 x 6 = 70 of PostgreSQL's default 100 (docs/operations.md "How many connections").
    A share too small to run is refused with the figures, rather than failing later on "too many clients"."""
    if settings.is_sqlite or not workers or os.environ.get("FLOWDECK_WORKER_DB_POOL_SIZE"):
        return settings.worker_db_pool_size
    limit, in_use = await _connection_figures(settings.database_url)
    room = limit - in_use - _SPARE_CONNECTIONS - (settings.db_pool_size + DEDICATED_CONNECTIONS)
    share = room // workers - DEDICATED_CONNECTIONS
    if share < _FEWEST_CONNECTIONS:
        raise ValueError(
            f"PostgreSQL allows {limit} connections and {in_use} are open: too few for serve"
            f" ({settings.db_pool_size} + {DEDICATED_CONNECTIONS}) and {workers} worker processes"
            f" ({_FEWEST_CONNECTIONS} + {DEDICATED_CONNECTIONS} or more each) with {_SPARE_CONNECTIONS} spare."
            " Raise max_connections, start fewer workers (--workers / FLOWDECK_SERVE_WORKERS) or set"
            " FLOWDECK_DB_POOL_SIZE / FLOWDECK_WORKER_DB_POOL_SIZE"
        )
    return min(settings.worker_db_pool_size, share)


async def _connection_figures(database_url: str) -> tuple[int, int]:
    import asyncpg  # type: ignore[import-untyped]

    from flowdeck.storage.pg_connect import connect_args

    conn = await asyncpg.connect(**connect_args(database_url, "flowdeck-serve"))
    try:
        limit = int(await conn.fetchval("SHOW max_connections"))
        in_use = int(await conn.fetchval("SELECT count(*) FROM pg_stat_activity"))
    finally:
        await conn.close()
    return limit, in_use
