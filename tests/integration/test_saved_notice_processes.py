"""The live notice of a saved version across processes (issue 24 §6): two ``flowdeck serve`` processes on one
PostgreSQL database, joined by Redis or by PostgreSQL LISTEN/NOTIFY. An editor connected to either process hears
a save made through the other one, once."""

from __future__ import annotations

import asyncio
import os
import uuid
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


@pytest.fixture(params=["redis", "postgres"])
def processes(request: pytest.FixtureRequest, postgres_url: str, tmp_path: Path) -> Iterator[list[str]]:
    """Two serve processes (A, B) on the same database, joined by the transport of the parameter."""
    env = {
        **os.environ,
        "FLOWDECK_DATABASE_URL": postgres_url,
        "FLOWDECK_SANDBOX_WORKERS": "1",
        "FLOWDECK_SECRET_KEY": "saved-notice-test",
    }
    env.pop("FLOWDECK_REDIS_URL", None)
    if request.param == "redis":
        env["FLOWDECK_REDIS_URL"] = request.getfixturevalue("redis_url")
    with serving(env, tmp_path, "serve-a", "serve-b") as started:
        yield [process.url for process in started]


@pytest.fixture
async def token(postgres_url: str) -> AsyncIterator[tuple[str, str]]:
    """A new user of a new tenant: their email and an API token."""
    db = Database(postgres_url)
    accounts = AccountsService(db, PasswordService(), LoginRateLimiter(db))
    unique = uuid.uuid4().hex[:10]
    email = f"editor-{unique}@example.com"
    await accounts.create_user(email, f"tenant-{unique}", None)
    _, made = await accounts.create_token_for_email(email, "editor")
    await db.dispose()
    yield email, made


class Editor:
    """An editor tab: a connection that joined one workflow and keeps every ``workflow_saved`` it hears."""

    def __init__(self) -> None:
        self.sio = socketio.AsyncClient(reconnection=False)
        self.saved: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        self.sio.on("workflow_saved", self.saved.put)

    async def open(self, url: str, token: str, workflow_id: str) -> None:
        await self.sio.connect(url, auth={"token": token}, transports=["websocket"])
        assert await self.sio.call("workflow_join", {"workflowId": workflow_id}, timeout=5) == {"ok": True}

    async def next_version(self) -> int:
        return int((await asyncio.wait_for(self.saved.get(), 10))["version"])


async def test_an_editor_on_another_process_hears_a_save_once(processes: list[str], token: tuple[str, str]) -> None:
    a, b = processes
    email, secret = token
    graph = definition([node("start", "start"), end()], [edge("start", "end")])
    async with httpx.AsyncClient(base_url=b, headers={"Authorization": f"Bearer {secret}"}, timeout=10) as api:
        workflow_id = (await api.post("/api/workflows", json=graph | {"title": "Shared"})).json()["id"]
        on_a, on_b = Editor(), Editor()
        await on_a.open(a, secret, workflow_id)
        await on_b.open(b, secret, workflow_id)
        try:
            body = graph | {"title": "Shared", "version": 1, "versionMessage": "saved through B"}
            assert (await api.put(f"/api/workflows/{workflow_id}", json=body)).status_code == 200
            notice = await asyncio.wait_for(on_a.saved.get(), 10)  # connected to A, saved through B
            assert notice == {"workflowId": workflow_id, "version": 2, "author": email, "message": "saved through B"}
            assert await on_b.next_version() == 2  # the saving process's own editor too
            # Once each: the next notice either editor hears is the next save's, not a second copy of this one.
            assert (await api.put(f"/api/workflows/{workflow_id}", json=body | {"version": 2})).status_code == 200
            assert await on_a.next_version() == 3
            assert await on_b.next_version() == 3
        finally:
            for editor in (on_a, on_b):
                if editor.sio.connected:
                    await editor.sio.disconnect()
