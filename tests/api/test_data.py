"""``/api/data-sources`` and ``/api/queries``: saved connections and queries, secrets, preview, a run."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from tests.api.conftest import Account, Server

pytestmark = pytest.mark.asyncio(loop_scope="module")


@pytest.fixture
def orders_db(tmp_path: Path) -> str:
    path = tmp_path / "orders.db"
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE orders (id INTEGER PRIMARY KEY, customer TEXT, total REAL)")
        conn.executemany(
            "INSERT INTO orders (customer, total) VALUES (?, ?)", [("ann", 12.5), ("bob", 40.0), ("ann", 3.0)]
        )
    return f"sqlite+aiosqlite:///{path}"


async def test_a_saved_sql_query_previews_with_bound_arguments(alice: Account, orders_db: str) -> None:
    created = await alice.client.post(
        "/api/data-sources", json={"name": "orders", "kind": "sql", "config": {"url": orders_db}}
    )
    assert created.status_code == 201, created.text
    source = created.json()
    query = await alice.client.post(
        "/api/queries",
        json={
            "name": "orders of",
            "dataSourceId": source["id"],
            "parameters": ["customer"],
            "sql": "SELECT id, total FROM orders WHERE customer = :customer ORDER BY id",
        },
    )
    assert query.status_code == 201, query.text
    query_id = query.json()["id"]
    preview = await alice.client.post(f"/api/queries/{query_id}/preview", json={"args": {"customer": "ann"}})
    assert preview.status_code == 200, preview.text
    result = preview.json()
    assert result["rows"] == [{"id": 1, "total": 12.5}, {"id": 3, "total": 3.0}]
    assert result["rowCount"] == 2
    # A value that looks like SQL is only ever a value.
    sneaky = await alice.client.post(f"/api/queries/{query_id}/preview", json={"args": {"customer": "ann' OR '1'='1"}})
    assert sneaky.json()["rows"] == []
    missing = await alice.client.post(f"/api/queries/{query_id}/preview", json={"args": {}})
    assert missing.status_code == 400
    assert "customer" in missing.json()["detail"]
    listed = (await alice.client.get(f"/api/queries?dataSourceId={source['id']}")).json()["items"]
    assert [q["id"] for q in listed] == [query_id]


async def test_secrets_are_stored_but_never_returned(alice: Account) -> None:
    created = await alice.client.post(
        "/api/data-sources",
        json={
            "name": "crm",
            "kind": "http",
            "config": {"baseUrl": "https://crm.example.test", "headers": {"Accept": "application/json"}},
            "secrets": {"Authorization": "Bearer s3cr3t-value"},
        },
    )
    assert created.status_code == 201, created.text
    for response in (created, await alice.client.get(f"/api/data-sources/{created.json()['id']}")):
        assert "s3cr3t-value" not in response.text
        assert response.json()["secrets"] == {"Authorization": "set"}


async def test_bad_input_names_the_field_and_stores_nothing(alice: Account, orders_db: str) -> None:
    bad = await alice.client.post("/api/data-sources", json={"name": "x", "kind": "ftp", "config": {}})
    assert bad.status_code == 400
    assert "kind" in bad.text
    source = (
        await alice.client.post("/api/data-sources", json={"name": "db", "kind": "sql", "config": {"url": orders_db}})
    ).json()
    undeclared = await alice.client.post(
        "/api/queries",
        json={
            "name": "q",
            "dataSourceId": source["id"],
            "parameters": [],
            "sql": "SELECT * FROM orders WHERE id = :id",
        },
    )
    assert undeclared.status_code == 400
    assert ":id" in undeclared.text or "'id'" in undeclared.text
    again = await alice.client.post(
        "/api/data-sources", json={"name": "db", "kind": "sql", "config": {"url": orders_db}}
    )
    assert again.status_code == 409
    assert (await alice.client.get("/api/queries")).json()["items"] == []


async def test_a_data_source_in_use_cannot_be_deleted(alice: Account, orders_db: str) -> None:
    source = (
        await alice.client.post("/api/data-sources", json={"name": "db", "kind": "sql", "config": {"url": orders_db}})
    ).json()
    query = (
        await alice.client.post(
            "/api/queries",
            json={"name": "all", "dataSourceId": source["id"], "parameters": [], "sql": "SELECT 1 AS one"},
        )
    ).json()
    refused = await alice.client.delete(f"/api/data-sources/{source['id']}")
    assert refused.status_code == 409
    assert "all" in refused.json()["detail"]
    assert (await alice.client.delete(f"/api/queries/{query['id']}")).status_code == 204
    assert (await alice.client.delete(f"/api/data-sources/{source['id']}")).status_code == 204


async def test_an_unreachable_source_is_a_bad_gateway_not_a_server_error(alice: Account) -> None:
    source = (
        await alice.client.post(
            "/api/data-sources", json={"name": "down", "kind": "http", "config": {"baseUrl": "http://127.0.0.1:9"}}
        )
    ).json()
    query = (
        await alice.client.post(
            "/api/queries",
            json={"name": "ping", "dataSourceId": source["id"], "parameters": [], "method": "GET", "path": "/"},
        )
    ).json()
    preview = await alice.client.post(f"/api/queries/{query['id']}/preview", json={"args": {}})
    assert preview.status_code == 502
    assert preview.json()["detail"]


async def test_another_tenant_cannot_see_or_use_them(
    server: Server, alice: Account, mallory: Account, orders_db: str
) -> None:
    source = (
        await alice.client.post("/api/data-sources", json={"name": "mine", "kind": "sql", "config": {"url": orders_db}})
    ).json()
    assert (await mallory.client.get(f"/api/data-sources/{source['id']}")).status_code == 404
    assert (await mallory.client.get("/api/data-sources")).json()["items"] == []
    stolen = await mallory.client.post(
        "/api/queries", json={"name": "q", "dataSourceId": source["id"], "parameters": [], "sql": "SELECT 1"}
    )
    assert stolen.status_code in (400, 404)


async def test_a_connection_is_tested_before_saving_and_once_saved(
    alice: Account, mallory: Account, orders_db: str
) -> None:
    body = {"name": "orders", "kind": "sql", "config": {"url": orders_db}}
    unsaved = await alice.client.post("/api/data-sources/test", json=body)
    assert unsaved.status_code == 200, unsaved.text
    answer = unsaved.json()
    assert answer["ok"] is True and answer["latencyMs"] >= 0
    assert (await alice.client.get("/api/data-sources")).json()["items"] == []  # testing saves nothing

    invalid = await alice.client.post("/api/data-sources/test", json={**body, "config": {"url": "nonsense"}})
    assert invalid.status_code == 400
    assert [p["path"] for p in invalid.json()["extra"]] == ["config.url"]

    source = (await alice.client.post("/api/data-sources", json=body)).json()
    saved = await alice.client.post(f"/api/data-sources/{source['id']}/test")
    assert saved.status_code == 200 and saved.json()["ok"] is True
    assert (await mallory.client.post(f"/api/data-sources/{source['id']}/test")).status_code == 404


async def test_testing_an_http_source_says_what_the_server_answered(alice: Account) -> None:
    body = {"name": "nowhere", "kind": "http", "config": {"baseUrl": "http://127.0.0.1:9"}}
    answer = (await alice.client.post("/api/data-sources/test", json=body)).json()
    assert answer["ok"] is False and answer["message"]


async def test_the_form_learns_the_allowed_sqlite_directories_and_a_refusal_names_them(alice: Account) -> None:
    rules = await alice.client.get("/api/data-sources/rules")
    assert rules.status_code == 200
    [shown] = rules.json()["sqliteDirectories"]  # FLOWDECK_SQLITE_DIRS as the operator set it
    outside = "sqlite+aiosqlite:////etc/flowdeck-nowhere.db"
    refused = await alice.client.post(
        "/api/data-sources", json={"name": "x", "kind": "sql", "config": {"url": outside}}
    )
    assert refused.status_code == 400
    assert "outside the directories" in refused.text and shown in refused.text
    assert (await alice.client.get("/api/data-sources")).json()["items"] == []
