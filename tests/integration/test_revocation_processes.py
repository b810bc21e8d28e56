"""Revocation across processes (issue 11 §5): two ``flowdeck serve`` processes on one PostgreSQL database,
joined by Redis. A credential revoked through one process closes the connections the other holds."""

from __future__ import annotations

import asyncio
import os
import shutil
import socket
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import socketio

from flowdeck.accounts.passwords import PasswordService
from flowdeck.accounts.rate_limit import LoginRateLimiter
from flowdeck.accounts.service import AccountsService
from flowdeck.storage.database import Database
from tests.support.graphs import definition, edge, end, node


def _flowdeck() -> str:
    local = Path(sys.executable).parent / "flowdeck"
    return str(local) if local.exists() else (shutil.which("flowdeck") or "flowdeck")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def _healthy(url: str, proc: subprocess.Popen[bytes], log: Path) -> None:
    async with httpx.AsyncClient(timeout=1) as client:
        for _ in range(400):
            if proc.poll() is not None:
                raise RuntimeError(f"flowdeck serve exited ({proc.returncode}):\n{log.read_text()[-3000:]}")
            try:
                if (await client.get(url + "/api/health")).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            await asyncio.sleep(0.1)
    raise RuntimeError(f"flowdeck serve did not answer:\n{log.read_text()[-3000:]}")


@pytest.fixture
def processes(postgres_url: str, redis_url: str, tmp_path: Path) -> Iterator[list[str]]:
    """Two serve processes (A, B) on the same database and Redis; their base URLs."""
    env = {
        **os.environ,
        "FLOWDECK_DATABASE_URL": postgres_url,
        "FLOWDECK_REDIS_URL": redis_url,
        "FLOWDECK_SANDBOX_WORKERS": "1",
        "FLOWDECK_SECRET_KEY": "revocation-test",
    }
    started: list[tuple[subprocess.Popen[bytes], str, Path]] = []
    try:
        for name in ("a", "b"):
            port, log = _free_port(), tmp_path / f"serve-{name}.log"
            with log.open("wb") as out:
                command = [_flowdeck(), "serve", "--host", "127.0.0.1", "--port", str(port)]
                proc = subprocess.Popen(command, env=env, stdout=out, stderr=subprocess.STDOUT)
            started.append((proc, f"http://127.0.0.1:{port}", log))

        async def all_healthy() -> None:
            await asyncio.gather(*(_healthy(url, proc, log) for proc, url, log in started))

        asyncio.run(all_healthy())
        yield [url for _, url, _ in started]
    finally:
        for proc, _, _ in started:
            proc.terminate()
        for proc, _, _ in started:
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()


@pytest.fixture
async def tokens(postgres_url: str) -> AsyncIterator[list[str]]:
    """Two API tokens of one new user."""
    db = Database(postgres_url)
    accounts = AccountsService(db, PasswordService(), LoginRateLimiter(db))
    email = f"holder-{os.getpid()}-{id(db)}@example.com"
    await accounts.create_user(email, f"tenant-{id(db)}", None)
    made = [(await accounts.create_token_for_email(email, name))[1] for name in ("held", "admin")]
    await db.dispose()
    yield made


class Live:
    def __init__(self) -> None:
        self.sio = socketio.AsyncClient(reconnection=False)
        self.closed = asyncio.Event()
        self.sio.on("disconnect", self._closed)

    async def _closed(self, *_: Any) -> None:
        self.closed.set()


async def test_a_token_revoked_in_one_process_closes_its_connections_in_another(
    processes: list[str], tokens: list[str]
) -> None:
    a, b = processes
    held, admin = tokens
    async with httpx.AsyncClient(base_url=b, headers={"Authorization": f"Bearer {admin}"}, timeout=10) as api:
        items = (await api.get("/api/tokens")).json()["items"]
        held_id = next(t["id"] for t in items if held.startswith(t["prefix"]) and t["name"] == "held")
        graph = definition([node("start", "start"), end()], [edge("start", "end")])
        workflow_id = (await api.post("/api/workflows", json=graph)).json()["id"]
        body = {"workflowId": workflow_id, "name": "w", "type": "json", "config": {}}
        widget_id = (await api.post("/api/widgets", json=body)).json()["id"]
        embed = (await api.post(f"/api/widgets/{widget_id}/embed-tokens", json={})).json()

        on_a, embed_on_a, kept_on_a = Live(), Live(), Live()
        await on_a.sio.connect(a, auth={"token": held}, transports=["websocket"])
        await embed_on_a.sio.connect(a, auth={"embedToken": embed["token"]}, transports=["websocket"])
        await kept_on_a.sio.connect(a, auth={"token": admin}, transports=["websocket"])
        try:
            assert (await api.delete(f"/api/tokens/{held_id}")).status_code == 204  # through process B
            await asyncio.wait_for(on_a.closed.wait(), 5)
            assert (await api.delete(f"/api/widgets/{widget_id}/embed-tokens/{embed['id']}")).status_code == 204
            await asyncio.wait_for(embed_on_a.closed.wait(), 5)
            answer = await kept_on_a.sio.call("workflow_run_leave", {"runId": "x"}, timeout=5)
            assert answer == {"ok": True} and kept_on_a.sio.connected
        finally:
            for live in (on_a, embed_on_a, kept_on_a):
                if live.sio.connected:
                    await live.sio.disconnect()
