"""Issue 21's "500s from URLs" and "/validate accepts what save refuses", as an attacker tries them: a real
``flowdeck serve`` with the default settings, a second tenant sending the URLs and bodies of the report.

Every answer is a 400 naming the field (or ``valid: false`` with it), the server logs no traceback, and the
other tenant sees nothing of it.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from flowdeck.accounts.passwords import PasswordService
from flowdeck.accounts.rate_limit import LoginRateLimiter
from flowdeck.accounts.service import AccountsService
from flowdeck.storage.database import Database
from tests.support.flowdeck_processes import serving
from tests.support.graphs import definition, edge, end, node

pytestmark = pytest.mark.slow

REPORTED = ("http://0177.0.0.1/x", "http://127.000.000.001/", "http://xn--localhost/")


def _graph() -> dict[str, Any]:
    """A graph of the built-in node types (``serve`` has no test types)."""
    return definition([node("start", "start"), end()], [edge("start", "end")])


@dataclass
class Serve:
    url: str
    log: Path


@pytest.fixture
def serve(database_url: str, tmp_path: Path) -> Iterator[Serve]:
    """``flowdeck serve`` on a free port with the default settings (and a secret key, for notifications)."""
    env = {
        **os.environ,
        "FLOWDECK_DATABASE_URL": database_url,
        "FLOWDECK_SANDBOX_WORKERS": "1",
        "FLOWDECK_SECRET_KEY": "url-attacks-test",
    }
    env.pop("FLOWDECK_HTTP_ALLOW", None)
    with serving(env, tmp_path) as (serve,):
        yield Serve(serve.url, serve.log)


async def _token(database_url: str, who: str) -> str:
    db = Database(database_url)
    try:
        accounts = AccountsService(db, PasswordService(), LoginRateLimiter(db))
        email = f"{who}-{os.getpid()}-{id(db)}@example.com"
        await accounts.create_user(email, f"{who}-tenant-{id(db)}", None)
        return (await accounts.create_token_for_email(email, "attack"))[1]
    finally:
        await db.dispose()


def _paths(answer: httpx.Response) -> list[str]:
    return [p.get("path") or p.get("key") for p in answer.json().get("extra") or []]


async def _attack(client: httpx.AsyncClient) -> None:
    workflow = (await client.post("/api/workflows", json=_graph())).json()
    for url in REPORTED:
        failing = _graph() | {"options": {"onFailure": {"url": url}}}
        created = await client.post("/api/workflows", json=failing)
        assert created.status_code == 400 and _paths(created) == ["options.onFailure.url"], (url, created.text)
        saved = await client.put(f"/api/workflows/{workflow['id']}", json=failing | {"version": 1})
        assert saved.status_code == 400 and _paths(saved) == ["options.onFailure.url"], (url, saved.text)
        tested = await client.post("/api/test-runs", json=failing)
        assert tested.status_code == 400 and _paths(tested) == ["options.onFailure.url"], (url, tested.text)
        validated = (await client.post("/api/workflows/validate", json=failing)).json()
        assert validated["valid"] is False and [p["path"] for p in validated["problems"]] == ["options.onFailure.url"]
        button = await client.post(f"/api/workflows/{workflow['id']}/notifications/test", json={"url": url})
        assert button.status_code == 400 and button.json()["detail"].startswith("url: "), (url, button.text)
        source = {"name": "internal", "kind": "http", "config": {"baseUrl": url}}
        for path in ("/api/data-sources", "/api/data-sources/test"):
            answer = await client.post(path, json=source)
            assert answer.status_code == 400 and _paths(answer) == ["config.baseUrl"], (url, path, answer.text)

    sneaky: dict[str, Any] = _graph() | {"owner_id": "someone-else", "is_admin": True}
    validated = (await client.post("/api/workflows/validate", json=sneaky)).json()
    assert validated["valid"] is False and validated["problems"][0]["path"] == "owner_id"
    for answer in (
        await client.post("/api/workflows", json=sneaky),
        await client.put(f"/api/workflows/{workflow['id']}", json=sneaky | {"version": 1}),
        await client.post("/api/test-runs", json=sneaky),
    ):
        assert answer.status_code == 400 and "owner_id" in answer.text, answer.text
    assert [w["id"] for w in (await client.get("/api/workflows")).json()["items"]] == [workflow["id"]]
    assert (await client.get("/api/data-sources")).json()["items"] == []


async def test_reported_urls_and_unknown_fields_are_400s_naming_the_field(database_url: str, serve: Serve) -> None:
    mallory, alice = await _token(database_url, "mallory"), await _token(database_url, "alice")
    async with httpx.AsyncClient(base_url=serve.url, timeout=30) as client:
        client.headers["Authorization"] = f"Bearer {mallory}"
        await _attack(client)
        client.headers["Authorization"] = f"Bearer {alice}"
        assert (await client.get("/api/workflows")).json()["items"] == []
        assert (await client.post("/api/workflows", json=_graph())).status_code == 201
    log = serve.log.read_text()
    assert "Traceback" not in log and "Internal Server Error" not in log, log[-3000:]
