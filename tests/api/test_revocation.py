"""Revocation reaches open connections (issue 11 §5): a revoked credential's Socket.IO connections are closed.

Each test holds a connection open with a credential, revokes the credential the way a user would, then waits
for the client's disconnect event; connections holding other credentials stay usable (shown by using them).
Across processes (Redis): tests/integration/test_revocation_processes.py.
"""

from __future__ import annotations

import asyncio
import hashlib
import time
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
import socketio

from flowdeck.storage.account_tables import api_tokens, user_sessions
from flowdeck.storage.database import Database
from flowdeck.storage.widget_tables import embed_tokens
from tests.api.conftest import PASSWORD, Account, Server, serve
from tests.api.test_widgets import embed_token, widget, workflow

pytestmark = pytest.mark.asyncio(loop_scope="module")


class Live:
    """An open python-socketio connection that notes when the server closes it."""

    def __init__(self) -> None:
        self.sio = socketio.AsyncClient(reconnection=False)
        self.closed = asyncio.Event()
        self.sio.on("disconnect", self._closed)

    async def _closed(self, *_: Any) -> None:
        self.closed.set()

    async def wait_closed(self) -> None:
        await asyncio.wait_for(self.closed.wait(), 5)

    async def usable(self) -> bool:
        """Still connected and answered by the server (a call it must acknowledge)."""
        answer = await self.sio.call("workflow_run_leave", {"runId": "anything"}, timeout=5)
        return bool(answer == {"ok": True})


@pytest_asyncio.fixture(loop_scope="module")
async def connect(server: Server) -> AsyncIterator[Any]:
    opened: list[Live] = []

    async def open_live(**kwargs: Any) -> Live:
        live = Live()
        await live.sio.connect(server.url, transports=["websocket"], **kwargs)
        opened.append(live)
        return live

    yield open_live
    for live in opened:
        if live.sio.connected:
            await live.sio.disconnect()


async def new_token(account: Account, name: str = "second") -> tuple[str, str]:
    created = (await account.client.post("/api/tokens", json={"name": name})).json()
    return created["id"], created["token"]


async def login(server: Server, account: Account) -> tuple[str, str]:
    """A new browser session of the account: (session cookie, CSRF token)."""
    async with server.client() as browser:
        answer = await browser.post("/api/auth/login", json={"email": account.email, "password": PASSWORD})
        assert answer.status_code == 200, answer.text
        return answer.cookies["flowdeck_session"], answer.json()["csrfToken"]


async def test_revoking_an_api_token_closes_its_connections_and_only_those(
    server: Server, alice: Account, mallory: Account, connect: Any
) -> None:
    token_id, token = await new_token(alice)
    doomed = [await connect(auth={"token": token}), await connect(auth={"token": token})]
    kept = await connect(auth={"token": alice.token})
    mallorys = await connect(auth={"token": mallory.token})

    assert (await mallory.client.delete(f"/api/tokens/{token_id}")).status_code == 404  # another tenant cannot
    assert await doomed[0].usable()
    assert (await alice.client.delete(f"/api/tokens/{token_id}")).status_code == 204
    for live in doomed:
        await live.wait_closed()
    assert await kept.usable() and await mallorys.usable()
    with pytest.raises(socketio.exceptions.ConnectionError):
        await connect(auth={"token": token})


async def test_logging_out_closes_the_sessions_connections_and_not_another_sessions(
    server: Server, alice: Account, connect: Any
) -> None:
    (cookie, csrf), (other_cookie, _) = await login(server, alice), await login(server, alice)
    doomed = await connect(headers={"Cookie": f"flowdeck_session={cookie}"})
    kept = await connect(headers={"Cookie": f"flowdeck_session={other_cookie}"})

    async with server.client(cookies={"flowdeck_session": cookie}) as browser:
        logout = await browser.post("/api/auth/logout", headers={"X-CSRF-Token": csrf})
        assert logout.status_code == 204
    await doomed.wait_closed()
    assert await kept.usable()
    with pytest.raises(socketio.exceptions.ConnectionError):
        await connect(headers={"Cookie": f"flowdeck_session={cookie}"})


async def test_revoking_an_embed_token_closes_its_embed_connections(
    server: Server, alice: Account, connect: Any
) -> None:
    widget_id = await widget(alice, await workflow(alice), "json", {})
    revoked, kept = await embed_token(alice, widget_id), await embed_token(alice, widget_id)
    doomed = await connect(auth={"embedToken": revoked["token"]})
    staying = await connect(auth={"embedToken": kept["token"]})
    assert await doomed.sio.call("widget_join", {"token": revoked["token"]}, timeout=5) == {"ok": True}

    deleted = await alice.client.delete(f"/api/widgets/{widget_id}/embed-tokens/{revoked['id']}")
    assert deleted.status_code == 204
    await doomed.wait_closed()
    assert await staying.usable()


@pytest.mark.parametrize("what", ["widget", "workflow"])
async def test_deleting_the_widget_or_its_workflow_closes_its_embed_connections(
    server: Server, alice: Account, connect: Any, what: str
) -> None:
    workflow_id = await workflow(alice)
    widget_id = await widget(alice, workflow_id, "json", {})
    other_widget = await widget(alice, await workflow(alice), "json", {})
    doomed = await connect(auth={"embedToken": (await embed_token(alice, widget_id))["token"]})
    staying = await connect(auth={"embedToken": (await embed_token(alice, other_widget))["token"]})

    path = f"/api/widgets/{widget_id}" if what == "widget" else f"/api/workflows/{workflow_id}"
    assert (await alice.client.delete(path)).status_code == 204
    await doomed.wait_closed()
    assert await staying.usable()


async def test_a_credential_that_expires_while_connected_is_closed_too(api_db: Database, tmp_path: Path) -> None:
    async with serve(api_db, tmp_path, live_check_seconds=0.1) as server:
        owner = await server.account(f"owner-{uuid.uuid4().hex[:8]}@acme.test", f"acme-{uuid.uuid4().hex[:8]}")
        async with owner.client:
            token_id, token = await new_token(owner, "expiring")
            widget_id = await widget(owner, await workflow(owner), "json", {})
            embed = await embed_token(owner, widget_id)
            cookie, _ = await login(server, owner)
            opened = []
            for kwargs in (
                {"auth": {"token": token}},
                {"auth": {"embedToken": embed["token"]}},
                {"headers": {"Cookie": f"flowdeck_session={cookie}"}},
                {"auth": {"token": owner.token}},
            ):
                live = Live()
                await live.sio.connect(server.url, transports=["websocket"], **kwargs)
                opened.append(live)
            expiring_token, expiring_embed, expiring_session, kept = opened
            past = time.time() - 1
            async with api_db.transaction() as conn:
                await conn.execute(api_tokens.update().where(api_tokens.c.id == token_id).values(expires_at=past))
                await conn.execute(
                    embed_tokens.update().where(embed_tokens.c.id == embed["id"]).values(expires_at=past)
                )
                await conn.execute(
                    user_sessions.update()
                    .where(user_sessions.c.id == hashlib.sha256(cookie.encode()).hexdigest())
                    .values(expires_at=past)
                )
            for live in (expiring_token, expiring_embed, expiring_session):
                await live.wait_closed()
            assert await kept.usable()
            await kept.sio.disconnect()
