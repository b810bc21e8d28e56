"""API benchmark (a script, not a test): ``python tests/bench/bench_api.py [--runs N] [--clients C]``.

Serves the real app (``flowdeck.app.create_app``: REST, Socket.IO and the embedded worker in one
uvicorn process) on a fresh SQLite file, then measures from this process:

1. production runs started per second through ``POST /api/workflows/{id}/runs`` by C concurrent
   keep-alive clients (target: 300/s with 20 clients), with request latency percentiles and how long
   the worker takes to finish every run it was given;
2. node completion -> ``workflow_node_update`` at a connected Socket.IO client: the update's ``at``
   (the engine's decision time) against the time it arrives (target p50 <= 20 ms), idle and while
   the load of (1) runs.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import itertools
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import socketio
from alembic import command

from flowdeck.accounts.commands import open_accounts
from flowdeck.settings import Settings
from flowdeck.storage.database import Database
from flowdeck.storage.migrate import alembic_config

SMALL = {  # start -> end: what "a run" costs the API, not the handlers
    "title": "bench",
    "nodes": [
        {"id": "start", "type": "start", "config": {}},
        {"id": "end", "type": "end", "config": {"outputParameters": {"ok": "yes"}}},
    ],
    "edges": [{"id": "e", "source": "start", "target": "end"}],
}


def chain(length: int, wait: float) -> dict[str, Any]:
    """start -> wait (delay) -> c1 .. cN (conditions) -> end: the watcher joins during the wait."""
    branch = {"branches": [{"id": "go", "label": "go", "expression": "true"}]}
    ids = [f"c{i}" for i in range(1, length + 1)]
    nodes = [
        {"id": "start", "type": "start", "config": {}},
        {"id": "wait", "type": "delay", "config": {"seconds": wait}},
    ]
    nodes += [{"id": i, "type": "condition", "config": branch} for i in ids]
    nodes.append({"id": "end", "type": "end", "config": {"outputParameters": {}}})
    order = ["start", "wait", *ids, "end"]
    edges = [
        {"id": f"e{k}", "source": a, "target": b, **({"sourceHandle": "go"} if a.startswith("c") else {})}
        for k, (a, b) in enumerate(itertools.pairwise(order))
    ]
    return {"title": "chain", "nodes": nodes, "edges": edges}


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def prepare(database_url: str) -> str:
    """A fresh schema (marked migrated) with one user; returns an API token."""
    db = Database(database_url)
    await db.create_all()
    await db.dispose()
    await asyncio.to_thread(command.stamp, alembic_config(database_url), "head")
    async with open_accounts(Settings(database_url=database_url)) as accounts:
        await accounts.create_user("bench@bench.test", "bench", "bench-password")
        _, token = await accounts.create_token_for_email("bench@bench.test", "bench")
    return token


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process (Linux ``/proc``)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@contextlib.asynccontextmanager
async def server(database_url: str, with_worker: bool = True) -> AsyncIterator[tuple[str, int]]:
    port = free_port()
    env = {**os.environ, "FLOWDECK_DATABASE_URL": database_url}
    code = (
        "import uvicorn; from flowdeck.app import create_app; from flowdeck.settings import Settings; "
        f"uvicorn.run(create_app(Settings.from_env(), with_worker={with_worker}), host='127.0.0.1', port={port}, "
        "log_level='warning')"
    )
    process = subprocess.Popen([sys.executable, "-c", code], env=env)
    url = f"http://127.0.0.1:{port}"
    try:
        async with httpx.AsyncClient() as client:
            for _ in range(300):
                with contextlib.suppress(httpx.TransportError):
                    if (await client.get(f"{url}/api/health")).status_code == 200:
                        break
                await asyncio.sleep(0.1)
        yield url, process.pid
    finally:
        process.terminate()
        process.wait(30)


async def start_runs(
    url: str, token: str, workflow_id: str, runs: int, clients: int
) -> tuple[float, list[float], list[str]]:
    """``runs`` POSTs spread over ``clients`` keep-alive connections; (elapsed, latencies, run ids)."""
    latencies: list[float] = []
    run_ids: list[str] = []
    remaining = iter(range(runs))

    async def client_loop() -> None:
        headers = {"Authorization": f"Bearer {token}"}
        async with httpx.AsyncClient(base_url=url, headers=headers, timeout=30) as client:
            for _ in remaining:
                began = time.perf_counter()
                response = await client.post(f"/api/workflows/{workflow_id}/runs", json={"input": {"n": 1}})
                latencies.append(time.perf_counter() - began)
                assert response.status_code == 202, response.text
                run_ids.append(response.json()["instanceId"])

    began = time.perf_counter()
    await asyncio.gather(*(client_loop() for _ in range(clients)))
    return time.perf_counter() - began, latencies, run_ids


async def wait_all_finished(url: str, token: str, count: int, timeout: float = 300) -> float:
    began = time.perf_counter()
    headers = {"Authorization": f"Bearer {token}"}
    async with httpx.AsyncClient(base_url=url, headers=headers) as client:
        while time.perf_counter() - began < timeout:
            page = (await client.get("/api/runs", params={"status": "RUNNING", "limit": 1})).json()
            if not page["items"]:
                return time.perf_counter() - began
            await asyncio.sleep(0.05)
    raise TimeoutError(f"{count} runs did not finish in {timeout} s")


async def watch_latency(
    url: str, token: str, workflow_id: str, runs: int, stop: asyncio.Event | None = None
) -> list[float]:
    """Join chain runs one after another; the delay of every COMPLETED node update that arrives (ms)."""
    latencies: list[float] = []
    done = asyncio.Event()
    sio = socketio.AsyncClient(reconnection=False)

    @sio.on("workflow_node_update")
    async def on_node(data: dict[str, Any]) -> None:
        arrived = time.time()
        if data["status"] == "COMPLETED" and data["nodeID"] != "start":
            latencies.append((arrived - data["at"]) * 1000)

    @sio.on("workflow_status_update")
    async def on_status(data: dict[str, Any]) -> None:
        if data["status"] != "RUNNING":
            done.set()

    await sio.connect(url, auth={"token": token}, transports=["websocket"])
    headers = {"Authorization": f"Bearer {token}"}
    async with httpx.AsyncClient(base_url=url, headers=headers, timeout=30) as client:
        for _ in range(runs):
            if stop is not None and stop.is_set():
                break
            done.clear()
            run_id = (await client.post(f"/api/workflows/{workflow_id}/runs", json={})).json()["instanceId"]
            await sio.call("workflow_run_join", {"runId": run_id}, timeout=10)
            await asyncio.wait_for(done.wait(), 30)
            await sio.call("workflow_run_leave", {"runId": run_id}, timeout=10)
    await sio.disconnect()
    return latencies


def report(name: str, values: list[float], unit: str) -> None:
    print(
        f"  {name}: n={len(values)} p50={statistics.median(values):.2f} {unit} "
        f"p90={percentile(values, 0.9):.2f} p99={percentile(values, 0.99):.2f} max={max(values):.2f}"
    )


async def api_only(runs: int, clients: int) -> None:
    """The same load on a server without the embedded worker: what the API path alone sustains."""
    with tempfile.TemporaryDirectory() as tmp:
        database_url = f"sqlite+aiosqlite:///{Path(tmp) / 'bench.db'}"
        token = await prepare(database_url)
        async with server(database_url, with_worker=False) as (url, pid):
            async with httpx.AsyncClient(base_url=url, headers={"Authorization": f"Bearer {token}"}) as client:
                small = (await client.post("/api/workflows", json=SMALL)).json()["id"]
            await start_runs(url, token, small, 200, clients)
            cpu = cpu_seconds(pid)
            elapsed, latencies, _ = await start_runs(url, token, small, runs, clients)
            cpu = cpu_seconds(pid) - cpu
        print("3. the same load on a server without the embedded worker (runs are queued, none executed)")
        print(f"  {runs} runs in {elapsed:.2f} s: {runs / elapsed:.0f} runs started/s")
        report("request latency", [v * 1000 for v in latencies], "ms")
        print(f"  server CPU per run started: {cpu / runs * 1000:.2f} ms")


async def main(runs: int, clients: int, watched: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        database_url = f"sqlite+aiosqlite:///{Path(tmp) / 'bench.db'}"
        token = await prepare(database_url)
        async with server(database_url) as (url, pid):
            headers = {"Authorization": f"Bearer {token}"}
            async with httpx.AsyncClient(base_url=url, headers=headers) as client:
                small = (await client.post("/api/workflows", json=SMALL)).json()["id"]
                slow = (await client.post("/api/workflows", json=chain(8, 0.3))).json()["id"]

            print(f"1. production runs started through POST /api/workflows/{{id}}/runs, {clients} clients (SQLite)")
            await start_runs(url, token, small, 200, clients)  # warm-up
            await wait_all_finished(url, token, 200)
            cpu_server, cpu_client = cpu_seconds(pid), time.process_time()
            elapsed, latencies, _ = await start_runs(url, token, small, runs, clients)
            drained = await wait_all_finished(url, token, runs)
            cpu_server, cpu_client = cpu_seconds(pid) - cpu_server, time.process_time() - cpu_client
            print(f"  {runs} runs in {elapsed:.2f} s: {runs / elapsed:.0f} runs started/s (target >= 300)")
            report("request latency", [v * 1000 for v in latencies], "ms")
            end_to_end = runs / (elapsed + drained)
            print(f"  every run finished {drained:.2f} s after the last start ({end_to_end:.0f} runs/s end to end)")
            print(
                f"  CPU per run: server {cpu_server / runs * 1000:.2f} ms (API + engine + worker, one process), "
                f"this client {cpu_client / runs * 1000:.2f} ms"
            )

            print("2. node completion -> workflow_node_update at a connected client")
            report("idle", await watch_latency(url, token, slow, watched), "ms")
            stop = asyncio.Event()
            watcher = asyncio.create_task(watch_latency(url, token, slow, watched, stop))
            await start_runs(url, token, small, runs, clients)
            stop.set()
            report(f"while {clients} clients start runs", await watcher, "ms")
            await wait_all_finished(url, token, runs)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=3000, help="runs to start (default 3000)")
    parser.add_argument("--clients", type=int, default=20, help="concurrent HTTP clients (default 20)")
    parser.add_argument("--watched", type=int, default=20, help="runs the Socket.IO client watches (default 20)")
    args = parser.parse_args()
    asyncio.run(main(args.runs, args.clients, args.watched))
    asyncio.run(api_only(args.runs, args.clients))
