"""Revocation across processes (issue 11 §5): two ``flowdeck serve`` processes on one PostgreSQL database,
joined by Redis. A credential revoked through one process closes the connections the other holds."""

from __future__ import annotations

import asyncio
import os
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
from tests.support.flowdeck_processes import serving
from tests.support.graphs import definition, edge, end, node


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
    with serving(env, tmp_path, "serve-a", "serve-b") as started:
        yield [process.url for process in started]


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
