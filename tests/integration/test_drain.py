"""Graceful drain with real processes and real signals: SIGTERM lets running nodes finish, once.

A worker told to stop stops claiming, lets the nodes it runs finish (up to FLOWDECK_SHUTDOWN_GRACE),
records their results and hands back the rest; a second signal stops the drain at once. The sandbox
processes ignore a SIGTERM sent to the whole process group, as systemd sends it.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
import sqlalchemy as sa

from flowdeck.engine.engine import Engine
from flowdeck.handlers.python_code import PythonCodeHandler
from flowdeck.handlers.registry import HandlerRegistry, builtin_handlers
from flowdeck.sandbox.pool import SandboxPool
from flowdeck.storage.database import Database
from flowdeck.storage.tables import instance_logs, node_jobs
from tests.support.graphs import definition, edge, end, linear, node
from tests.support.handlers import make_test_registry
from tests.support.runs import read_outcome, start

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.slow


@contextmanager
def process(command: list[str], env: dict[str, str]) -> Iterator[subprocess.Popen[str]]:
    """A process in a process group of its own (so a test can signal the whole group, as systemd does)."""
    child = subprocess.Popen(
        command, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True
    )
    try:
        yield child
    finally:
        if child.poll() is None:
            os.killpg(child.pid, signal.SIGKILL)
            child.wait(10)
        if child.stdout is not None:
            child.stdout.close()


def read_until(child: subprocess.Popen[str], text: str) -> None:
    assert child.stdout is not None
    seen = []
    for line in child.stdout:
        seen.append(line)
        if text in line:
            return
    raise AssertionError(f"the process ended without printing {text!r}: {''.join(seen)}")


async def wait_for_event(engine: Engine, instance_id: str, event_type: str, node_id: str) -> None:
    for _ in range(500):
        if any(r.event_type == event_type and r.node_id == node_id for r in await engine.state.read_log(instance_id)):
            return
        await asyncio.sleep(0.02)
    raise AssertionError(f"{node_id} never logged {event_type}")


async def submitter(db: Database, registry: HandlerRegistry | None = None) -> tuple[Engine, str]:
    engine = Engine(db, registry or make_test_registry())  # starts runs, runs no worker
    await engine.start(with_worker=False)
    return engine, await engine.tenants.ensure("acme")


async def test_sigterm_lets_the_running_node_finish_once_and_hands_back_the_rest(
    database_url: str, db: Database
) -> None:
    env = {**os.environ, "FLOWDECK_DATABASE_URL": database_url, "FLOWDECK_SHUTDOWN_GRACE": "30"}
    engine, tenant_id = await submitter(db)
    graph = linear(2)
    graph["nodes"][1] = node("s1", config={"sleep": 1.5})
    with process([sys.executable, "-m", "tests.support.step_worker", "--lease-seconds", "3"], env) as worker:
        read_until(worker, "running")
        instance_id = await start(engine, tenant_id, graph)
        await wait_for_event(engine, instance_id, "NODE_STARTED", "s1")
        os.killpg(worker.pid, signal.SIGTERM)
        read_until(worker, "stopped")
        assert worker.wait(10) == 0

    drained = await read_outcome(engine, instance_id)
    assert drained.count("NODE_COMPLETED", "s1") == 1  # finished during the drain, its result recorded
    assert drained.count("NODE_STARTED", "s2") == 0  # nothing new was started by the stopping worker

    finisher = Engine(db, make_test_registry(), poll_interval=0.05, worker_id="finisher")
    await finisher.start()
    try:
        run = await finisher.wait_for_run(instance_id, 20)
    finally:
        await finisher.stop()
    assert run.status.value == "COMPLETED"
    outcome = await read_outcome(engine, instance_id)
    assert outcome.per_node("NODE_STARTED") == dict.fromkeys(["start", "s1", "s2", "end"], 1)  # s1 never ran twice


async def test_a_second_signal_ends_the_drain_at_once(database_url: str, db: Database) -> None:
    env = {**os.environ, "FLOWDECK_DATABASE_URL": database_url, "FLOWDECK_SHUTDOWN_GRACE": "600"}
    engine, tenant_id = await submitter(db)
    graph = linear(1)
    graph["nodes"][1] = node("s1", config={"sleep": 600}, timeoutSeconds=3600)
    graph["options"] = {"timeoutSeconds": 3600}
    with process([sys.executable, "-m", "tests.support.step_worker", "--lease-seconds", "30"], env) as worker:
        read_until(worker, "running")
        instance_id = await start(engine, tenant_id, graph)
        await wait_for_event(engine, instance_id, "NODE_STARTED", "s1")
        os.killpg(worker.pid, signal.SIGTERM)
        read_until(worker, "stopping")
        os.killpg(worker.pid, signal.SIGTERM)
        read_until(worker, "stopped")
        assert worker.wait(10) == 0

    async with db.read() as conn:
        owners = (await conn.execute(sa.select(node_jobs.c.lease_owner).where(node_jobs.c.node_id == "s1"))).all()
    assert owners == [(None,)]  # handed back: due now for any other worker
    assert (await read_outcome(engine, instance_id)).count("NODE_COMPLETED", "s1") == 0


@pytest.mark.postgres
async def test_flowdeck_worker_drains_a_python_node_through_a_process_group_sigterm(postgres_url: str) -> None:
    """systemd's stop: SIGTERM to every process of the service; the sandbox must not die of it."""
    db = Database(postgres_url)
    try:
        engine, tenant_id = await submitter(
            db, HandlerRegistry([*builtin_handlers(), PythonCodeHandler(SandboxPool())])
        )
        busy = node("busy", "python", config={"code": "x = 0\nfor i in range(3000000):\n    x += i\nreturn {'x': x}"})
        graph = definition(
            [node("start", "start"), busy, end(params={"x": "{{ ctx.busy.x }}"})],
            [edge("start", "busy"), edge("busy", "end", "success")],
        )
        env = {**os.environ, "FLOWDECK_DATABASE_URL": postgres_url, "FLOWDECK_SHUTDOWN_GRACE": "60"}
        with process([sys.executable, "-m", "flowdeck", "worker"], env) as worker:
            read_until(worker, "running")
            instance_id = await start(engine, tenant_id, graph)
            await wait_for_event(engine, instance_id, "NODE_STARTED", "busy")
            os.killpg(worker.pid, signal.SIGTERM)
            read_until(worker, "worker stopped")
            assert worker.wait(10) == 0
        outcome = await read_outcome(engine, instance_id)
        completed = [r for r in outcome.rows if r.event_type == "NODE_COMPLETED" and r.node_id == "busy"]
        failed = [r for r in outcome.rows if r.event_type == "NODE_FAILED"]
        assert not failed, [r.error_message for r in failed]
        assert len(completed) == 1 and completed[0].payload["output"] == {"x": sum(range(3000000))}
    finally:
        await db.dispose()


def _call(url: str, token: str, method: str, path: str, body: object = None) -> dict:
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url + path, data=data, method=method)
    request.add_header("Authorization", f"Bearer {token}")
    request.add_header("Content-Type", "application/json")
    with urllib.request.urlopen(request, timeout=10) as response:
        return dict(json.loads(response.read()))


async def _until_listening(url: str) -> None:
    for _ in range(200):
        try:
            with urllib.request.urlopen(url + "/api/health", timeout=1):
                return
        except OSError:
            await asyncio.sleep(0.05)
    raise AssertionError("flowdeck serve never answered")


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


async def test_flowdeck_serve_drains_a_python_node_through_a_process_group_sigterm(tmp_path: Path) -> None:
    database_url = f"sqlite+aiosqlite:///{tmp_path / 'flowdeck.db'}"
    port = _free_port()
    env = {**os.environ, "FLOWDECK_DATABASE_URL": database_url, "FLOWDECK_PORT": str(port)}
    flowdeck = [sys.executable, "-m", "flowdeck"]
    subprocess.run([*flowdeck, "migrate"], env=env, check=True, capture_output=True)
    create_user = [*flowdeck, "users", "create", "--email", "ops@acme.test", "--tenant", "acme"]
    subprocess.run(create_user, input="a long password 1\n", env=env, check=True, capture_output=True, text=True)
    create_token = [*flowdeck, "tokens", "create", "--email", "ops@acme.test"]
    made = subprocess.run(create_token, env=env, check=True, capture_output=True, text=True)
    token = made.stdout.strip().splitlines()[-1]
    busy = node("busy", "python", config={"code": "x = 0\nfor i in range(3000000):\n    x += i\nreturn {'x': x}"})
    graph = definition(
        [node("start", "start"), busy, end(params={"x": "{{ ctx.busy.x }}"})],
        [edge("start", "busy"), edge("busy", "end", "success")],
    )
    url = f"http://127.0.0.1:{port}"
    with process([*flowdeck, "serve"], env) as serve:
        read_until(serve, "Flowdeck is ready")
        await _until_listening(url)
        workflow_id = _call(url, token, "POST", "/api/workflows", graph)["id"]
        run_id = _call(url, token, "POST", f"/api/workflows/{workflow_id}/runs", {"input": {}})["instanceId"]
        for _ in range(500):
            if _call(url, token, "GET", f"/api/runs/{run_id}")["nodes"].get("busy", {}).get("status") == "RUNNING":
                break
            await asyncio.sleep(0.02)
        else:
            raise AssertionError("the python node never started")
        os.killpg(serve.pid, signal.SIGTERM)
        assert serve.wait(60) in (0, -signal.SIGTERM)  # uvicorn re-raises the signal it handled

    db = Database(database_url)
    try:
        async with db.read() as conn:
            rows = (
                await conn.execute(
                    sa.select(instance_logs.c.event_type, instance_logs.c.error_message).where(
                        instance_logs.c.instance_id == run_id, instance_logs.c.node_id == "busy"
                    )
                )
            ).all()
    finally:
        await db.dispose()
    events = [event for event, _ in rows]
    assert "NODE_FAILED" not in events, rows
    assert events.count("NODE_COMPLETED") == 1
