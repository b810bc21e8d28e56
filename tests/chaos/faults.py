"""Random faults, counted: a worker or serve killed (SIGKILL to its process group, started again a moment
later), a worker frozen past its lease and woken (a zombie that comes back with stale work), PostgreSQL
cutting Flowdeck's connections (``pg_terminate_backend``), PostgreSQL restarted or crashed (``-m immediate``).
On SQLite: serve killed, or frozen past its leases and woken."""

from __future__ import annotations

import asyncio
import random
from collections import Counter
from collections.abc import Coroutine
from dataclasses import dataclass, field
from typing import Any

import asyncpg

from tests.support.flowdeck_processes import FlowdeckProcess
from tests.support.postgres_cluster import Cluster


@dataclass
class Faults:
    serve: FlowdeckProcess
    workers: list[FlowdeckProcess]
    lease_seconds: float
    cluster: Cluster | None = None
    rng: random.Random = field(default_factory=random.Random)
    counts: Counter[str] = field(default_factory=Counter)
    _pending: set[asyncio.Task[None]] = field(default_factory=set)
    _busy: set[str] = field(default_factory=set)
    """Processes being started again or waiting to be woken: no second fault until then."""

    def choices(self) -> dict[str, int]:
        """Fault -> weight. SQLite has one process (serve) and no server to cut or restart."""
        if self.cluster is None:
            return {"kill_serve": 2, "zombie_serve": 1}
        return {
            "kill_worker": 3,
            "zombie_worker": 2,
            "terminate_backends": 3,
            "kill_serve": 1,
            "restart_postgres": 1,
            "crash_postgres": 1,
        }

    async def run(self, seconds: float, gap: tuple[float, float]) -> None:
        loop = asyncio.get_running_loop()
        until = loop.time() + seconds
        weights = self.choices()
        while loop.time() < until:
            await asyncio.sleep(self.rng.uniform(*gap))
            fault = self.rng.choices(list(weights), list(weights.values()))[0]
            await getattr(self, fault)()
        await self.settle()

    async def settle(self) -> None:
        """Every killed process started again, every frozen one woken."""
        while self._pending:
            await asyncio.gather(*list(self._pending))

    def _later(self, coroutine: Coroutine[Any, Any, None]) -> None:
        task = asyncio.create_task(coroutine)
        self._pending.add(task)
        task.add_done_callback(self._pending.discard)

    def _idle_worker(self) -> FlowdeckProcess | None:
        ready = [w for w in self.workers if w.alive and w.name not in self._busy]
        return self.rng.choice(ready) if ready else None

    async def _restart(self, process: FlowdeckProcess) -> None:
        self._busy.add(process.name)
        try:
            await asyncio.sleep(self.rng.uniform(0.3, 1.5))
            for _ in range(5):  # a start during a PostgreSQL restart may fail: it is started again
                process.start()
                try:
                    await asyncio.to_thread(process.wait_ready, 120)
                    return
                except RuntimeError:
                    self.counts[f"{process.name} start failed, started again"] += 1
                    process.stop()
            raise AssertionError(f"{process.name} never started again:\n{process.tail()}")
        finally:
            self._busy.discard(process.name)

    async def kill_worker(self) -> None:
        if (worker := self._idle_worker()) is not None:
            worker.kill()
            self.counts["worker SIGKILL"] += 1
            self._later(self._restart(worker))

    async def kill_serve(self) -> None:
        if self.serve.alive and self.serve.name not in self._busy:
            self.serve.kill()
            self.counts["serve SIGKILL"] += 1
            self._later(self._restart(self.serve))

    async def zombie_worker(self) -> None:
        if (worker := self._idle_worker()) is not None:
            self._freeze(worker)
            self.counts["worker SIGSTOP past its lease, then SIGCONT"] += 1

    async def zombie_serve(self) -> None:
        """SQLite's one process frozen past its leases: woken, it takes its own nodes over while the frozen
        attempts finish and report late, the zombie case a single process can meet (a long pause)."""
        if self.serve.alive and self.serve.name not in self._busy:
            self._freeze(self.serve)
            self.counts["serve SIGSTOP past its lease, then SIGCONT"] += 1

    def _freeze(self, process: FlowdeckProcess) -> None:
        process.freeze()
        self._busy.add(process.name)

        async def wake() -> None:
            await asyncio.sleep(self.lease_seconds + self.rng.uniform(1.0, 3.0))
            process.thaw()
            self._busy.discard(process.name)

        self._later(wake())

    async def terminate_backends(self) -> None:
        assert self.cluster is not None
        try:
            conn = await asyncpg.connect(host="127.0.0.1", port=self.cluster.port, user="postgres", database="postgres")
        except (OSError, asyncpg.PostgresError):
            return  # PostgreSQL is restarting: nothing to cut
        try:
            cut = await conn.fetchval(
                "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
                "WHERE backend_type = 'client backend' AND pid <> pg_backend_pid() AND random() < 0.6"
            )
        finally:
            await conn.close()
        self.counts["pg_terminate_backend rounds"] += 1
        self.counts["connections terminated"] += int(cut or 0)

    async def restart_postgres(self) -> None:
        assert self.cluster is not None
        await asyncio.to_thread(self.cluster.pg_ctl, "-m", "fast", "restart")
        self.counts["PostgreSQL restart"] += 1

    async def crash_postgres(self) -> None:
        """An immediate stop (no shutdown checkpoint: the WAL not yet written is lost, as in a crash, and
        with it the workers' decisions that committed asynchronously and were not yet flushed), then a
        start that recovers from the WAL."""
        assert self.cluster is not None
        await asyncio.to_thread(self.cluster.pg_ctl, "-m", "immediate", "restart")
        self.counts["PostgreSQL crash"] += 1
