"""``flowdeck serve --workers N``: engine worker processes beside the API process, with real processes and signals.

The children run nodes (their own worker id on the NODE_STARTED rows), stop with ``serve``, are started
again after a crash, and on SQLite without Redis reach serve's browsers over serve's pipes to them.
"""

from __future__ import annotations

import asyncio
import os
import queue
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from itertools import pairwise
from pathlib import Path
from typing import IO, Any

import httpx
import pytest
import socketio
from prometheus_client.parser import text_string_to_metric_families

from flowdeck.bench_metrics import free_ports
from flowdeck.engine.engine import Engine
from flowdeck.serving import children_metrics_addrs, connection_share, serve_worker_count
from flowdeck.settings import Settings
from flowdeck.storage.database import Database
from tests.support.flowdeck_processes import provision
from tests.support.handlers import make_test_registry
from tests.support.runs import read_outcome
from tests.support.waiting import until

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.slow


class Lines:
    """A process's output (stdout and stderr), read by a thread so a test can wait for a line with a timeout."""

    def __init__(self, child: subprocess.Popen[str]) -> None:
        self.seen: list[str] = []
        self._lines: queue.Queue[str | None] = queue.Queue()
        assert child.stdout is not None
        stream = child.stdout
        threading.Thread(target=self._read, args=(stream,), daemon=True).start()

    def _read(self, stream: IO[str]) -> None:
        try:
            for line in stream:
                self._lines.put(line.rstrip("\n"))
        except ValueError:  # the test's teardown closed the stream while a process below serve still held the pipe
            pass
        self._lines.put(None)

    def wait_for(self, text: str, timeout: float = 30.0) -> str:
        while True:
            try:
                line = self._lines.get(timeout=timeout)
            except queue.Empty:
                raise AssertionError(f"no line with {text!r} within {timeout} s:\n" + "\n".join(self.seen)) from None
            if line is None:
                raise AssertionError(f"the process ended without printing {text!r}:\n" + "\n".join(self.seen))
            self.seen.append(line)
            if text in line:
                return line


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def serve(database_url: str, *args: str, **env: str) -> Iterator[tuple[subprocess.Popen[str], Lines]]:
    environment = {k: v for k, v in os.environ.items() if k != "FLOWDECK_REDIS_URL"}
    environment.update(FLOWDECK_DATABASE_URL=database_url, FLOWDECK_SANDBOX_WORKERS="1", **env)
    command = [sys.executable, "-m", "flowdeck", "serve", "--port", str(_free_port()), *args]
    child = subprocess.Popen(
        command, cwd=ROOT, env=environment, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    try:
        yield child, Lines(child)
    finally:
        for pid in _worker_children(child.pid):  # never leave one behind, whatever the test did
            os.kill(pid, signal.SIGKILL)
        if child.poll() is None:
            child.kill()
            child.wait(10)
        if child.stdout is not None:
            child.stdout.close()


def _worker_children(parent: int) -> list[int]:
    """The pids of the supervised ``flowdeck worker`` processes whose parent is ``parent``."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            command = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        ppid = int(stat[stat.rindex(")") + 2 :].split()[1])
        if ppid == parent and b"--supervised" in command:
            found.append(int(entry.name))
    return found


def _worker_id(line: str) -> str:
    """``[worker 0] worker <id> running (concurrency 16)`` -> ``<id>``."""
    return line.split("] worker ", 1)[1].split()[0]


def _delays(count: int) -> dict[str, object]:
    """start -> ``count`` short delays one after another -> end (a delay's end is claimed by any worker)."""
    ids = ["start", *(f"d{i}" for i in range(count)), "end"]
    nodes = [{"id": "start", "type": "start", "config": {}}]
    nodes += [{"id": f"d{i}", "type": "delay", "config": {"seconds": 0.05}} for i in range(count)]
    nodes.append({"id": "end", "type": "end", "config": {}})
    edges = [{"id": f"e{i}", "source": a, "target": b} for i, (a, b) in enumerate(pairwise(ids))]
    return {"title": "delays", "nodes": nodes, "edges": edges}


async def _started_by(engine: Engine, instance_ids: list[str]) -> set[str]:
    workers = set()
    for instance_id in instance_ids:
        run = await engine.wait_for_run(instance_id, 30)
        assert run.status.value == "COMPLETED"
        outcome = await read_outcome(engine, instance_id)
        assert set(outcome.per_node("NODE_STARTED").values()) == {1}  # each node started once, by one worker
        workers |= {r.payload["workerId"] for r in outcome.rows if r.event_type == "NODE_STARTED"}
    return workers


async def test_a_worker_process_beside_serve_runs_nodes_and_stops_with_it(postgres_url: str) -> None:
    await _runs_nodes_and_stops_with_serve(postgres_url, {})


async def test_on_sqlite_with_redis_a_worker_process_runs_nodes_too(redis_url: str, tmp_path: Path) -> None:
    # Allowed on SQLite with Redis, which carries the child's updates to serve.
    await _runs_nodes_and_stops_with_serve(
        f"sqlite+aiosqlite:///{tmp_path / 'f.db'}", {"FLOWDECK_REDIS_URL": redis_url}
    )


async def _runs_nodes_and_stops_with_serve(url: str, env: dict[str, str]) -> None:
    with serve(url, "--workers", "1", FLOWDECK_SHUTDOWN_GRACE="10", **env) as (child, lines):
        lines.wait_for("Flowdeck is ready")
        worker_id = _worker_id(lines.wait_for("[worker 0] worker "))
        [pid] = _worker_children(child.pid)
        db = Database(url)
        submitter = Engine(db, make_test_registry())  # starts runs, runs no worker
        await submitter.start(with_worker=False)
        try:
            tenant_id = await submitter.tenants.ensure("acme")
            workflow = await submitter.create_workflow(tenant_id, _delays(3))
            seen: set[str] = set()
            for _ in range(10):  # each delay's end wakes every worker: they race for the next node
                ids = [await submitter.start_workflow_run(tenant_id, workflow.id, {}) for _ in range(5)]
                seen |= await _started_by(submitter, ids)
                if worker_id in seen:
                    break
        finally:
            await submitter.stop()
            await db.dispose()
        assert worker_id in seen, f"the worker process {worker_id} started no node; started by {seen}"
        child.send_signal(signal.SIGTERM)
        lines.wait_for("[worker 0] worker stopped")
        assert child.wait(30) in (0, -signal.SIGTERM)  # uvicorn re-raises the signal it handled
    assert not Path(f"/proc/{pid}").exists()  # serve waited for it before exiting


async def test_a_crashed_worker_process_is_started_again(postgres_url: str) -> None:
    with serve(postgres_url, "--workers", "1", FLOWDECK_SHUTDOWN_GRACE="5") as (child, lines):
        lines.wait_for("[worker 0] worker ")
        [first] = _worker_children(child.pid)
        os.kill(first, signal.SIGKILL)
        restarted = lines.wait_for("starting it again")
        assert f"(pid {first}) exited with status -9" in restarted
        lines.wait_for("[worker 0] worker ")  # the new one is running
        [second] = _worker_children(child.pid)
        assert second != first
        child.send_signal(signal.SIGTERM)
        lines.wait_for("[worker 0] worker stopped")
        assert child.wait(30) in (0, -signal.SIGTERM)


async def test_on_sqlite_without_redis_a_browser_on_serve_sees_live_the_nodes_its_worker_process_ran(
    tmp_path: Path,
) -> None:
    """No Redis, no LISTEN/NOTIFY: serve's pipes to its worker process carry the nodes the child runs to the
    browser connected to serve (node updates the browser hears after it joined, not the join's snapshot),
    and the jobs serve queues wake the child."""
    url = f"sqlite+aiosqlite:///{tmp_path / 'f.db'}"
    token = provision(
        {**{k: v for k, v in os.environ.items() if k != "FLOWDECK_REDIS_URL"}, "FLOWDECK_DATABASE_URL": url},
        "pipes@example.com",
        "acme",
    )
    with serve(url, "--workers", "1", FLOWDECK_SHUTDOWN_GRACE="10") as (child, lines):
        base = lines.wait_for("Flowdeck is starting on ").split(" on ", 1)[1].split()[0].rstrip("/")
        lines.wait_for("Flowdeck is ready")
        worker_id = _worker_id(lines.wait_for("[worker 0] worker "))
        db = Database(url)
        reader = Engine(db, make_test_registry())  # reads the log; never started
        try:
            async with httpx.AsyncClient(
                base_url=base, headers={"Authorization": f"Bearer {token}"}, timeout=10
            ) as api:
                workflow_id = (await api.post("/api/workflows", json=_delays(4))).json()["id"]
                child_nodes: set[str] = set()
                for _ in range(10):  # serve's own worker races the child for each node
                    run_id = (await api.post(f"/api/workflows/{workflow_id}/runs", json={})).json()["instanceId"]
                    heard = await _live_node_updates(base, token, run_id)
                    outcome = await read_outcome(reader, run_id)
                    assert outcome.run.status.value == "COMPLETED"
                    by_child = {
                        r.node_id
                        for r in outcome.rows
                        if r.event_type == "NODE_STARTED" and r.payload["workerId"] == worker_id
                    }
                    live = by_child - set(heard.get("_snapshot", []))  # finished before the join: in its snapshot
                    for node_id in live:
                        assert "COMPLETED" in heard.get(node_id, []), (node_id, heard)
                    child_nodes |= live
                    if child_nodes:
                        break
        finally:
            await db.dispose()
        assert child_nodes, f"the worker process {worker_id} ran no node the browser heard live"
        child.send_signal(signal.SIGTERM)
        lines.wait_for("[worker 0] worker stopped")
        assert child.wait(30) in (0, -signal.SIGTERM)


async def _live_node_updates(base: str, token: str, run_id: str) -> dict[str, list[str]]:
    """The statuses a browser joined to the run heard for each node until the run completed (the nodes its
    join snapshot already showed finished are listed under ``_snapshot``)."""
    sio = socketio.AsyncClient(reconnection=False)
    heard: dict[str, list[str]] = {}
    finished = asyncio.Event()

    def snapshot(data: dict[str, Any]) -> None:
        done = [n for n, state in data["nodes"].items() if state["status"] == "COMPLETED"]
        heard.setdefault("_snapshot", []).extend(done)
        if data["status"] == "COMPLETED":
            finished.set()

    def node(data: dict[str, Any]) -> None:
        heard.setdefault(data["nodeID"], []).append(data["status"])

    def status(data: dict[str, Any]) -> None:
        if data["status"] == "COMPLETED":
            finished.set()

    sio.on("workflow_run_snapshot", snapshot)
    sio.on("workflow_node_update", node)
    sio.on("workflow_status_update", status)
    await sio.connect(base, auth={"token": token}, transports=["websocket"])
    try:
        assert await sio.call("workflow_run_join", {"runId": run_id}, timeout=10) == {"ok": True}
        await asyncio.wait_for(finished.wait(), 30)  # published after the run's last node: all arrived
    finally:
        await sio.disconnect()
    return heard


def test_how_many_worker_processes_serve_starts() -> None:
    sqlite, postgres = Settings(), Settings(database_url="postgresql+asyncpg://h/db")
    assert serve_worker_count(sqlite, None) == 0
    assert serve_worker_count(postgres, None) == max(0, (os.cpu_count() or 1) - 1)
    assert serve_worker_count(Settings(database_url=postgres.database_url, serve_workers=3), None) == 3
    assert serve_worker_count(Settings(database_url=postgres.database_url, serve_workers=3), 0) == 0
    assert serve_worker_count(sqlite, 2) == 2  # on SQLite when asked (over pipes, or Redis when set)
    with pytest.raises(ValueError, match="at least 0"):
        serve_worker_count(sqlite, -1)
    assert Settings.from_env({"FLOWDECK_SERVE_WORKERS": "0"}).serve_workers == 0
    assert Settings.from_env({}).serve_workers is None


def test_serves_worker_processes_listen_for_metrics_on_the_ports_after_serves() -> None:
    assert children_metrics_addrs(("127.0.0.1", 9464), 2) == ["127.0.0.1:9465", "127.0.0.1:9466"]
    assert children_metrics_addrs(("::1", 9464), 1) == ["[::1]:9465"]
    assert children_metrics_addrs(("0.0.0.0", 65534), 1) == ["0.0.0.0:65535"]
    with pytest.raises(ValueError, match=r"FLOWDECK_METRICS_ADDR: serve's 2 worker processes .* past 65535"):
        children_metrics_addrs(("127.0.0.1", 65534), 2)


async def _heard_control(client: httpx.AsyncClient, port: int) -> float:
    text = (await client.get(f"http://127.0.0.1:{port}/metrics")).text
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name == "flowdeck_fanout_messages_received_total" and sample.labels == {"kind": "control"}:
                return sample.value
    return 0.0


async def test_every_process_of_serve_can_be_scraped(tmp_path: Path) -> None:
    """With ``FLOWDECK_METRICS_ADDR`` serve listens there and its worker process on the next port, with the
    database counters of its own (on SQLite, how long it held and waited for the write lock)."""
    port = free_ports(2)
    url = f"sqlite+aiosqlite:///{tmp_path / 'f.db'}"
    with serve(url, "--workers", "1", FLOWDECK_METRICS_ADDR=f"127.0.0.1:{port}") as (child, lines):
        lines.wait_for(f"[worker 0] metrics on http://127.0.0.1:{port + 1}/metrics")
        lines.wait_for("[worker 0] worker ")
        async with httpx.AsyncClient(timeout=10) as client:
            own = (await client.get(f"http://127.0.0.1:{port}/metrics")).text
            worker = (await client.get(f"http://127.0.0.1:{port + 1}/metrics")).text
            for text in (own, worker):  # the child said it listens there (its line): two processes, two listeners
                assert "flowdeck_db_commits_total" in text and "flowdeck_sqlite_write_lock_wait_seconds_total" in text
            for listener in (port, port + 1):  # and each hears the other's heartbeats over the pipes
                await until(
                    lambda at=listener: _heard_control(client, at), what=f"heartbeats counted on port {listener}"
                )
        child.send_signal(signal.SIGTERM)
        lines.wait_for("[worker 0] worker stopped")
        assert child.wait(30) in (0, -signal.SIGTERM)


async def test_a_worker_process_does_not_outlive_a_serve_killed_hard(postgres_url: str) -> None:
    with serve(postgres_url, "--workers", "1", FLOWDECK_SHUTDOWN_GRACE="5") as (child, lines):
        lines.wait_for("[worker 0] worker ")
        [pid] = _worker_children(child.pid)
        child.kill()  # SIGKILL: nothing is forwarded; the worker reads end-of-file on its stdin
        child.wait(10)
        lines.wait_for("worker stopped")  # it drained, printing to its stderr (ours) now that its stdout is gone
        for _ in range(200):
            if _gone(pid):
                break
            await asyncio.sleep(0.05)
        assert _gone(pid)


def _gone(pid: int) -> bool:
    """Exited (a zombie waiting for whichever process adopted it counts as exited)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True
    return stat[stat.rindex(")") + 2] == "Z"


def test_serve_shares_postgres_connections_between_its_processes(postgres_url: str) -> None:
    """Without FLOWDECK_WORKER_DB_POOL_SIZE, serve gives each worker process the worker pool (4) when
    max_connections can take it beside serve's own, less when not, and refuses to start more processes than
    the server can take."""
    settings = Settings.from_env({"FLOWDECK_DATABASE_URL": postgres_url})
    share = connection_share(settings, 2)
    assert 2 <= share <= 4
    with pytest.raises(ValueError, match="max_connections"):
        connection_share(settings, 400)
    sqlite = Settings.from_env(
        {"FLOWDECK_DATABASE_URL": "sqlite+aiosqlite:///x.db", "FLOWDECK_WORKER_DB_POOL_SIZE": "7"}
    )
    assert connection_share(sqlite, 2) == 7
