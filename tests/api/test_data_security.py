"""Data sources tried as mallory (another tenant) would, over HTTP, on SQLite and PostgreSQL storage.

The server runs as an operator would set it up: SQLite files only from one directory, outgoing HTTP
only to the host name ``localhost`` (so every spelling of 127.0.0.1 stays refused), and this
server's database as Flowdeck's own.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from sqlalchemy.engine import make_url

from flowdeck.storage.database import Database
from tests.api.conftest import Account, Server, serve
from tests.integration.queries.support import closed_port, http_server

pytestmark = pytest.mark.asyncio(loop_scope="module")


@pytest.fixture(scope="module")
def allowed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("allowed")


@pytest.fixture(scope="module")
def echo() -> Iterator[str]:
    """An HTTP server reached as ``http://localhost:PORT`` (the one host the operator allowed)."""
    with http_server() as base:
        yield base.replace("127.0.0.1", "localhost")


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def server(api_db: Database, tmp_path_factory: pytest.TempPathFactory, allowed: Path) -> AsyncIterator[Server]:
    queries = {"sqlite_dirs": [str(allowed)], "http_allow": ("localhost",)}
    async with serve(api_db, tmp_path_factory.mktemp("static"), queries=queries) as running:
        yield running


def shop(directory: Path, name: str = "shop.db") -> Path:
    path = directory / name
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE IF NOT EXISTS orders (id INTEGER PRIMARY KEY, total REAL)")
        conn.execute("INSERT INTO orders (total) VALUES (12.5)")
    conn.close()
    return path


def refused_fields(response: Any) -> list[str]:
    assert response.status_code == 400, response.text
    return [problem["path"] for problem in response.json()["extra"]]


async def preview(account: Account, source_id: str, sql: str) -> Any:
    body = {"name": f"q-{abs(hash(sql))}", "dataSourceId": source_id, "parameters": [], "sql": sql}
    created = await account.client.post("/api/queries", json=body)
    assert created.status_code == 201, created.text
    return await account.client.post(f"/api/queries/{created.json()['id']}/preview", json={"args": {}})


async def test_flowdecks_own_database_is_out_of_reach(server: Server, mallory: Account, allowed: Path) -> None:
    own = make_url(server.app.context.services.engine.db.url)
    if own.get_backend_name() == "sqlite":
        own_file = Path(str(own.database))
        os.link(own_file, allowed / "innocent.db")  # the same file on disk under an allowed name
        urls = [f"sqlite+aiosqlite:///file://localhost{own_file}?uri=true", f"sqlite:///file://localhost{own_file}",
                f"sqlite:///{own_file}", f"sqlite:///{allowed / 'innocent.db'}"]  # fmt: skip
    else:
        urls = [f"sqlite+aiosqlite:///file://localhost{allowed}/flowdeck.db?uri=true"]
    for url in urls:
        body = {"name": "x", "kind": "sql", "config": {"url": url}}
        attempt = await mallory.client.post("/api/data-sources", json=body)
        assert refused_fields(attempt) == ["config.url"], url
        tried = await mallory.client.post("/api/data-sources/test", json={"kind": "sql", "config": {"url": url}})
        assert refused_fields(tried) == ["config.url"]
    assert (await mallory.client.get("/api/data-sources")).json()["items"] == []
    if own.get_backend_name() == "postgresql":
        # another spelling of the same server and database: saving cannot tell, connecting does
        sneaky = own.set(host="localhost").render_as_string(hide_password=False)
        body = {"name": "warehouse", "kind": "sql", "config": {"url": sneaky}}
        unsaved = (await mallory.client.post("/api/data-sources/test", json=body)).json()
        assert unsaved["ok"] is False and "Flowdeck's own database" in unsaved["message"]
        source = (await mallory.client.post("/api/data-sources", json=body)).json()
        saved = (await mallory.client.post(f"/api/data-sources/{source['id']}/test")).json()
        assert saved["ok"] is False and "Flowdeck's own database" in saved["message"]
        stolen = await preview(mallory, source["id"], "SELECT email, password_hash FROM users")
        assert stolen.status_code == 400 and "Flowdeck's own database" in stolen.json()["detail"]
        assert "password_hash" not in stolen.text and "@" not in stolen.json()["detail"]


async def test_sqlite_files_only_inside_the_allowed_directory(alice: Account, allowed: Path, tmp_path: Path) -> None:
    outside = shop(tmp_path)
    for url, expected in [
        (f"sqlite:///{outside}", "FLOWDECK_SQLITE_DIRS"),
        ("sqlite:////etc/passwd", "FLOWDECK_SQLITE_DIRS"),
        (f"sqlite:///{allowed}/missing.db", "does not exist"),
        (f"sqlite:///{allowed}/shop.db?mode=rwc", "URL parameters"),
    ]:
        body = {"name": "x", "kind": "sql", "config": {"url": url}}
        attempt = await alice.client.post("/api/data-sources", json=body)
        assert refused_fields(attempt) == ["config.url"] and expected in attempt.text, url
    assert not (allowed / "missing.db").exists()
    inside = shop(allowed, f"{alice.tenant}.db")
    source = (await alice.client.post(
        "/api/data-sources", json={"name": "shop", "kind": "sql", "config": {"url": f"sqlite:///{inside}"}}
    )).json()  # fmt: skip
    assert (await preview(alice, source["id"], "SELECT total FROM orders")).json()["rows"] == [{"total": 12.5}]
    write = await preview(alice, source["id"], "DELETE FROM orders")
    assert write.status_code == 400 and "config.readOnly" in write.json()["detail"]
    opened = await alice.client.put(
        f"/api/data-sources/{source['id']}", json={"config": {"url": f"sqlite:///{inside}", "readOnly": False}}
    )
    assert opened.status_code == 200, opened.text
    assert (await preview(alice, source["id"], "DELETE FROM orders WHERE 1 = 1")).json()["rowCount"] == 1


async def test_a_stored_source_outside_the_directories_stays_and_fails_clearly(
    server: Server, alice: Account, tmp_path: Path
) -> None:
    """Saved before FLOWDECK_SQLITE_DIRS existed: still listed, and every use says what to do."""
    old = shop(tmp_path)
    tenant = await server.engine.tenants.ensure(alice.tenant)
    stored = await server.app.context.services.data.store.create_source(
        tenant, name="legacy", kind="sql", config={"url": f"sqlite:///{old}"}
    )
    assert [s["name"] for s in (await alice.client.get("/api/data-sources")).json()["items"]] == ["legacy"]
    used = await preview(alice, stored.id, "SELECT total FROM orders")
    assert used.status_code == 400 and "FLOWDECK_SQLITE_DIRS" in used.json()["detail"]
    tested = (await alice.client.post(f"/api/data-sources/{stored.id}/test")).json()
    assert tested["ok"] is False and "FLOWDECK_SQLITE_DIRS" in tested["message"]
    renamed = await alice.client.put(f"/api/data-sources/{stored.id}", json={"name": "legacy (move me)"})
    assert renamed.status_code == 200  # what is stored can still be edited (and fixed)


INTERNAL = ["http://127.0.0.1:8000", "http://2130706433", "http://0177.0.0.1", "http://0x7f000001", "http://0",
            "http://[::1]", "http://[::ffff:127.0.0.1]", "http://169.254.169.254/latest", "http://[fe80::1]",
            "http://metadata.google.internal/computeMetadata/v1", "http://10.0.0.8", "http://192.168.0.1",
            "http://[fd00::5]", "http://224.0.0.1", "https://100.100.100.200"]  # fmt: skip


async def test_http_sources_cannot_point_at_internal_addresses(mallory: Account, echo: str) -> None:
    for base in INTERNAL:
        body = {"name": "x", "kind": "http", "config": {"baseUrl": base}}
        assert refused_fields(await mallory.client.post("/api/data-sources", json=body)) == ["config.baseUrl"], base
        assert refused_fields(await mallory.client.post("/api/data-sources/test", json=body)) == ["config.baseUrl"]
    assert (await mallory.client.get("/api/data-sources")).json()["items"] == []
    allowed = await mallory.client.post("/api/data-sources/test", json={"kind": "http", "config": {"baseUrl": echo}})
    assert allowed.json()["ok"] is True and "HTTP 200" in allowed.json()["message"]


async def test_re_pointing_a_source_needs_its_secrets_again(alice: Account, mallory: Account, echo: str) -> None:
    crm = {"name": "crm", "kind": "http", "config": {"baseUrl": f"{echo}/crm"}, "secrets": {"X-Key": "alice-key"}}
    source = (await alice.client.post("/api/data-sources", json=crm)).json()
    who = {"name": "who", "dataSourceId": source["id"], "parameters": [], "method": "GET", "path": "/me"}
    query = (await alice.client.post("/api/queries", json=who)).json()

    async def key_sent() -> Any:
        answer = await alice.client.post(f"/api/queries/{query['id']}/preview", json={"args": {}})
        return answer.json()["body"]["path"], answer.json()["body"]["headers"].get("x-key")

    assert await key_sent() == ("/crm/me", "alice-key")
    elsewhere = {"baseUrl": f"{echo}/collector"}
    for secrets in ({"X-Key": "set"}, None, {}):  # the form's mask, or nothing: the stored key must not follow
        body: dict[str, Any] = {"config": elsewhere} | ({} if secrets is None else {"secrets": secrets})
        assert refused_fields(await alice.client.put(f"/api/data-sources/{source['id']}", json=body)) == [
            "secrets.X-Key"
        ]
    stolen = await mallory.client.put(f"/api/data-sources/{source['id']}", json={"config": elsewhere})
    assert stolen.status_code == 404
    assert await key_sent() == ("/crm/me", "alice-key")  # nothing changed
    moved = await alice.client.put(
        f"/api/data-sources/{source['id']}", json={"config": elsewhere, "secrets": {"X-Key": "new-key"}}
    )
    assert moved.status_code == 200 and moved.json()["secrets"] == {"X-Key": "set"}
    assert await key_sent() == ("/collector/me", "new-key")


async def test_connection_tests_answer_ok_message_and_latency(alice: Account, mallory: Account, allowed: Path) -> None:
    inside = shop(allowed, f"probe-{alice.tenant}.db")
    body = {"name": "probe", "kind": "sql", "config": {"url": f"sqlite:///{inside}"}}
    unsaved = await alice.client.post("/api/data-sources/test", json=body)
    assert unsaved.status_code == 200 and unsaved.json()["ok"] is True
    assert isinstance(unsaved.json()["latencyMs"], float) and unsaved.json()["message"]
    down = await alice.client.post(
        "/api/data-sources/test", json={"kind": "http", "config": {"baseUrl": f"http://localhost:{closed_port()}"}}
    )
    assert down.status_code == 200 and down.json()["ok"] is False and "cannot reach" in down.json()["message"]
    assert refused_fields(await alice.client.post("/api/data-sources/test", json={"kind": "ftp", "config": {}})) == [
        "kind"
    ]
    saved = (await alice.client.post("/api/data-sources", json=body)).json()
    assert (await alice.client.post(f"/api/data-sources/{saved['id']}/test")).json()["ok"] is True
    assert (await mallory.client.post(f"/api/data-sources/{saved['id']}/test")).status_code == 404
