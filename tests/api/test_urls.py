"""Every URL a user types, on every surface that takes one: refused with a 400 naming the field, never a 500.

The server here has no ``FLOWDECK_HTTP_ALLOW`` (as by default), so every internal host is refused.
Surfaces: a data source's ``config.baseUrl`` (create, update, the test button), a workflow's
``options.onFailure.url`` / ``options.onSlaBreach.url`` (create, save, ``/validate``, test run, the
notification test button), and a saved query's preview and connection test on a source stored before
the rules (where the URL is read when it is used).
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
import pytest_asyncio

from flowdeck.queries.models import DataSource
from flowdeck.storage.data_tables import data_sources
from flowdeck.storage.database import Database
from tests.api.conftest import Account, Server, serve
from tests.support.addresses import BAD_URLS, PUBLIC_URLS
from tests.support.graphs import definition, edge, end, node

pytestmark = pytest.mark.asyncio(loop_scope="module")


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def server(api_db: Database, tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Server]:
    """The app with the default outgoing-request policy (no FLOWDECK_HTTP_ALLOW)."""
    async with serve(api_db, tmp_path_factory.mktemp("static"), queries={"http_allow": ()}) as running:
        yield running


def _flow(**options: Any) -> dict[str, Any]:
    return definition([node("start", "start"), end()], [edge("start", "end")], **options)


def _source(url: Any) -> dict[str, Any]:
    return {"name": f"src-{uuid.uuid4().hex[:8]}", "kind": "http", "config": {"baseUrl": url}}


def _refused(response: httpx.Response, field: str, url: str, where: str) -> None:
    assert response.status_code == 400, f"{where} {url!r}: {response.status_code} {response.text[:300]}"
    paths = [p.get("path") for p in response.json().get("extra") or []]
    assert field in paths, f"{where} {url!r}: {response.text[:300]}"


async def _every_surface_refuses(alice: Account, workflow: dict[str, Any], source_id: str, url: str) -> None:
    client = alice.client
    answers = await asyncio.gather(
        client.post("/api/data-sources", json=_source(url)),
        client.post("/api/data-sources/test", json=_source(url)),
        client.put(f"/api/data-sources/{source_id}", json={"config": {"baseUrl": url}}),
        client.post("/api/workflows", json=_flow(onFailure={"url": url})),
        client.put(f"/api/workflows/{workflow['id']}", json=_flow(onSlaBreach={"url": url}) | {"version": 1}),
        client.post("/api/test-runs", json=_flow(onFailure={"url": url})),
        client.post("/api/workflows/validate", json=_flow(onSlaBreach={"url": url})),
        client.post(f"/api/workflows/{workflow['id']}/notifications/test", json={"url": url}),
    )
    ds_create, ds_test, ds_update, wf_create, wf_save, test_run, validated, notify_test = answers
    _refused(ds_create, "config.baseUrl", url, "create data source")
    _refused(ds_test, "config.baseUrl", url, "test data source")
    _refused(ds_update, "config.baseUrl", url, "update data source")
    _refused(wf_create, "options.onFailure.url", url, "create workflow")
    _refused(wf_save, "options.onSlaBreach.url", url, "save workflow")
    _refused(test_run, "options.onFailure.url", url, "test run")
    assert validated.status_code == 200, validated.text
    assert validated.json()["valid"] is False
    assert [p["path"] for p in validated.json()["problems"]] == ["options.onSlaBreach.url"], (url, validated.text)
    assert notify_test.status_code == 400 and notify_test.json()["detail"].startswith("url: "), (url, notify_test.text)


async def test_every_bad_url_is_a_400_naming_the_field_everywhere(alice: Account) -> None:
    workflow = (await alice.client.post("/api/workflows", json=_flow())).json()
    source = (await alice.client.post("/api/data-sources", json=_source("https://api.example.com/v1"))).json()
    for url in BAD_URLS:
        await _every_surface_refuses(alice, workflow, source["id"], url)
    assert [s["name"] for s in (await alice.client.get("/api/data-sources")).json()["items"]] == [source["name"]]
    assert (await alice.client.get(f"/api/workflows/{workflow['id']}")).json()["version"] == 1
    assert [w["id"] for w in (await alice.client.get("/api/workflows")).json()["items"]] == [workflow["id"]]
    assert (await alice.client.get("/api/runs")).json()["items"] == []


async def test_public_urls_are_accepted(alice: Account) -> None:
    for url in PUBLIC_URLS:
        created = await alice.client.post("/api/data-sources", json=_source(url.split("?")[0]))  # a base: no query
        assert created.status_code == 201, (url, created.text)
        validated = await alice.client.post("/api/workflows/validate", json=_flow(onFailure={"url": url}))
        assert validated.json() == {"valid": True, "problems": []}, url
        saved = await alice.client.post("/api/workflows", json=_flow(onFailure={"url": url}))
        assert saved.status_code == 201, (url, saved.text)


async def _stored_source(server: Server, alice: Account, url: str) -> DataSource:
    """A data source saved with ``url`` as its baseUrl, past today's checks (as an older version could)."""
    tenant = await server.engine.tenants.ensure(alice.tenant)
    store = server.app.context.services.data.store
    source = await store.create_source(
        tenant, name=f"legacy-{uuid.uuid4().hex[:8]}", kind="http", config={"baseUrl": "https://api.example.com"}
    )
    async with server.engine.db.transaction() as conn:
        update = data_sources.update().where(data_sources.c.id == source.id).values(config={"baseUrl": url})
        await conn.execute(update)
    return source


async def test_a_source_stored_before_the_rules_fails_clearly_when_used(server: Server, alice: Account) -> None:
    """Saved before the URL rules (or by an older version): its preview is a 400 and its test says why."""
    for url in ("http://xn--localhost/", "http://0177.0.0.1/x", "http://example.com:99999/", "http://a\\@b.example/"):
        stored = await _stored_source(server, alice, url)
        query = {"name": "q", "dataSourceId": stored.id, "parameters": [], "method": "GET", "path": "/p"}
        created = await alice.client.post("/api/queries", json=query | {"name": f"q-{uuid.uuid4().hex[:8]}"})
        assert created.status_code == 201, created.text
        preview = await alice.client.post(f"/api/queries/{created.json()['id']}/preview", json={"args": {}})
        assert preview.status_code == 400 and "the URL" in preview.json()["detail"], (url, preview.text)
        tested = await alice.client.post(f"/api/data-sources/{stored.id}/test")
        assert tested.status_code == 200 and tested.json()["ok"] is False, (url, tested.text)
        assert "the URL" in tested.json()["message"]


async def test_a_query_path_that_cannot_be_read_on_its_base_is_refused(alice: Account) -> None:
    source = (await alice.client.post("/api/data-sources", json=_source("https://api.example.com/v1"))).json()
    for path in ("/a b", "/a\\@evil.example", "/x\ty", "/ok#frag"):
        query = {"name": "q", "dataSourceId": source["id"], "parameters": [], "method": "GET", "path": path}
        response = await alice.client.post("/api/queries", json=query)
        assert response.status_code == 400, (path, response.text)
        assert [p["path"] for p in response.json()["extra"]] == ["path"], (path, response.text)
