"""The ``flowdeck serve`` that ``flowdeck bench --http`` calls (bench_http.py): a subprocess on free ports, its
own metrics listeners (serve's and, on the ports after it, its worker processes'), the CPU of its process tree
and the database counters of all its processes."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import httpx

from flowdeck.bench_metrics import free_port, free_ports, scrape_totals
from flowdeck.proc_stats import tree_cpu_seconds
from flowdeck.settings import METRICS_LISTENER_VARIABLES, Settings

__all__ = ("BenchServer", "serve_for_bench")


@dataclass
class BenchServer:
    process: asyncio.subprocess.Process
    url: str
    log: Path
    metrics: list[str]
    """The metrics listeners of serve and of each of its worker processes."""

    async def database_counters(self) -> dict[str, float] | None:
        """The ``flowdeck_db_*`` and ``flowdeck_sqlite_*`` counters summed over serve and its worker processes
        (``None``: one did not answer, metrics being off)."""
        return await scrape_totals(self.metrics, ("flowdeck_db_", "flowdeck_sqlite_"))

    def cpu_seconds(self) -> float:
        """CPU seconds (user + system) of the server and every process below it, including those already reaped."""
        return tree_cpu_seconds(self.process.pid)

    def log_tail(self) -> str:
        return "\n".join(self.log.read_text(errors="replace").splitlines()[-20:])


@contextlib.asynccontextmanager
async def serve_for_bench(settings: Settings, workdir: Path, workers: int | None = None) -> AsyncIterator[BenchServer]:
    """A ``flowdeck serve`` on a free port, answering ``/api/health`` (with ``workers`` worker processes
    beside it, all running); stopped by SIGTERM (then killed) at the end."""
    port = free_port()
    metrics_port = free_ports(1 + (workers or 0))  # serve's, then its worker processes' (each scraped)
    env = {
        **{k: v for k, v in os.environ.items() if k not in METRICS_LISTENER_VARIABLES},
        "FLOWDECK_DATABASE_URL": settings.database_url,
        "FLOWDECK_HOST": "127.0.0.1",
        "FLOWDECK_METRICS_ADDR": f"127.0.0.1:{metrics_port}",
    }
    if workers is not None:
        env["FLOWDECK_SERVE_WORKERS"] = str(workers)
    log = workdir / "serve.log"
    with log.open("wb") as sink:
        process = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "flowdeck",
            "serve",
            "--port",
            str(port),
            cwd=workdir,
            env=env,
            stdout=sink,
            stderr=sink,
        )
    metrics = [f"http://127.0.0.1:{metrics_port + i}/metrics" for i in range(1 + (workers or 0))]
    server = BenchServer(process, f"http://127.0.0.1:{port}", log, metrics)
    try:
        await _wait_healthy(server)
        await _wait_workers(server, workers or 0)
        yield server
    finally:
        if process.returncode is None:
            process.send_signal(signal.SIGTERM)
            try:
                await asyncio.wait_for(process.wait(), 40)
            except TimeoutError:
                process.kill()
                await process.wait()


async def _wait_healthy(server: BenchServer) -> None:
    deadline = time.monotonic() + 90
    async with httpx.AsyncClient(base_url=server.url, timeout=5) as client:
        while time.monotonic() < deadline:
            if server.process.returncode is not None:
                raise RuntimeError(f"flowdeck serve exited ({server.process.returncode}):\n{server.log_tail()}")
            with contextlib.suppress(httpx.TransportError):
                if (await client.get("/api/health")).status_code == 200:
                    return
            await asyncio.sleep(0.1)
    raise RuntimeError(f"flowdeck serve did not answer /api/health within 90 s:\n{server.log_tail()}")


async def _wait_workers(server: BenchServer, count: int) -> None:
    """Until serve printed each worker process's ``running`` line."""
    deadline = time.monotonic() + 90
    while count and time.monotonic() < deadline:
        text = server.log.read_text(errors="replace")
        if all(f"[worker {i}] worker " in text for i in range(count)):
            return
        await asyncio.sleep(0.1)
    if count:
        raise RuntimeError(f"serve's {count} worker processes did not start within 90 s:\n{server.log_tail()}")
