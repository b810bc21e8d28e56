"""Hostile request bodies on every route the app has (its own route table, not a hand-picked list).

Bad bytes are a 400 that names the problem wherever they hide, a body that is not JSON on a JSON
endpoint is a 415, and neither changes anything stored.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from flowdeck.api.body_checks import reads_json
from tests.api.conftest import Account, Server
from tests.support.graphs import linear

pytestmark = pytest.mark.asyncio(loop_scope="module")

BAD_UTF8 = {
    "a lone continuation byte in a value": b'{"title": "caf\x80"}',
    "0xff in a key": b'{"ti\xfftle": "x", "nodes": []}',
    "an overlong encoding of /": b'{"name": "..\xc0\xaf..\xc0\xafetc"}',
    "an encoded UTF-16 surrogate": b'{"name": "\xed\xa0\x80"}',
    "a sequence cut off at the end": b'{"name": "\xe2\x82',
    "Latin-1 text": '{"name": "Müller", "input": {"city": "Zürich"}}'.encode("latin-1"),
}
NOT_JSON = [
    None,  # no Content-Type at all
    "text/plain",
    "text/plain; charset=utf-8",
    "text/json",
    "application/x-www-form-urlencoded",
    "multipart/form-data; boundary=xyz",
    "application/xml",
    "application/jsonp",
    "application/json; charset=iso-8859-1",
    "application/json; charset=utf-16",
]
SKIPPED_METHODS = frozenset({"HEAD", "OPTIONS"})


@dataclass(frozen=True)
class Endpoint:
    method: str
    template: str
    json_body: bool

    def __str__(self) -> str:
        return f"{self.method} {self.template}"


def endpoints(server: Server) -> Iterator[Endpoint]:
    """Every method of every route the Litestar app serves (REST, hooks, embed, the editor, the schema)."""
    for route in server.app.api.routes:
        for handler in getattr(route, "route_handlers", ()):
            for method in sorted(handler.http_methods - SKIPPED_METHODS):
                yield Endpoint(method, route.path, reads_json(handler))


@dataclass
class Objects:
    """Real objects of alice's, so each request gets as far into its handler as it can."""

    values: dict[str, str]
    api_token_id: str
    embed_token_id: str

    def url(self, endpoint: Endpoint) -> str:
        def value(match: re.Match[str]) -> str:
            name, kind = match.groups()
            if (name, kind) == ("path", "str"):
                return "openapi.yaml"  # /schema/{path:str}, one of the schema's renderings
            if name == "token_id":
                return self.embed_token_id if "embed-tokens" in endpoint.template else self.api_token_id
            assert name in self.values, f"{endpoint}: give the path parameter {name!r} a real value in this test"
            return self.values[name]

        return re.sub(r"\{(\w+):(\w+)\}", value, endpoint.template)


async def objects_of(server: Server, alice: Account) -> Objects:
    client = alice.client
    workflow_id = (await client.post("/api/workflows", json=linear(1))).json()["id"]
    run_id = (await client.post(f"/api/workflows/{workflow_id}/runs", json={"input": {}})).json()["instanceId"]
    await server.engine.wait_for_run(run_id, 10)
    widget = {"workflowId": workflow_id, "name": "w", "type": "json", "config": {}}
    widget_id = (await client.post("/api/widgets", json=widget)).json()["id"]
    embed = (await client.post(f"/api/widgets/{widget_id}/embed-tokens", json={})).json()
    source = {"name": "crm", "kind": "http", "config": {"baseUrl": "https://crm.example.test"}}
    source_id = (await client.post("/api/data-sources", json=source)).json()["id"]
    query = {"name": "q", "dataSourceId": source_id, "parameters": [], "method": "GET", "path": "/orders"}
    query_id = (await client.post("/api/queries", json=query)).json()["id"]
    api_token_id = (await client.get("/api/tokens")).json()["items"][0]["id"]
    values = {
        "workflow_id": workflow_id,
        "version": "1",
        "instance_id": run_id,
        "run_id": run_id,
        "widget_id": widget_id,
        "token": embed["token"],
        "source_id": source_id,
        "query_id": query_id,
        "secret": "a-login-link-secret",
        "path": "workflows/" + workflow_id,
        "file_path": "main.js",
        "example_id": "loop",
        "node_id": "s1",
        "approval_id": str(uuid.uuid4()),  # a body is checked before the approval is looked up
    }
    return Objects(values, api_token_id, embed["id"])


async def everything_of(alice: Account) -> list[Any]:
    """What alice has, as the API shows it (to compare before and after)."""
    urls = ("/api/workflows", "/api/widgets", "/api/data-sources", "/api/queries", "/api/tokens")
    return [(await alice.client.get(url)).json() for url in urls]


async def test_the_route_table_is_what_these_tests_walk(server: Server) -> None:
    walked = {str(e) for e in endpoints(server) if e.json_body}
    assert {
        "POST /api/auth/login",
        "POST /api/workflows",
        "PUT /api/workflows/{workflow_id:str}",
        "POST /api/workflows/validate",
        "POST /api/workflows/{workflow_id:str}/runs",
        "POST /api/test-runs",
        "POST /api/data-sources",
        "PUT /api/queries/{query_id:str}",
        "POST /api/queries/{query_id:str}/preview",
        "POST /api/widgets/{widget_id:str}/embed-tokens",
    } <= walked
    assert len(walked) >= 15 and len(list(endpoints(server))) >= 50


async def test_invalid_utf8_anywhere_in_a_body_is_a_400_naming_it_on_every_endpoint(
    server: Server, alice: Account
) -> None:
    objects = await objects_of(server, alice)
    before = await everything_of(alice)
    for endpoint in endpoints(server):
        url = objects.url(endpoint)
        for what, body in BAD_UTF8.items():
            response = await alice.client.request(
                endpoint.method, url, content=body, headers={"Content-Type": "application/json"}
            )
            assert response.status_code == 400, f"{endpoint} with {what}: {response.status_code} {response.text}"
            answer = response.json()
            assert "not valid UTF-8" in answer["detail"] and "offset" in answer["detail"], answer
            assert answer["extra"] == [{"code": "invalid_encoding", "message": answer["detail"], "path": "body"}]
    assert await everything_of(alice) == before  # nothing stored, changed or deleted (the token still works)


async def test_the_400_names_the_byte_and_where_it_is(alice: Account) -> None:
    body = b'{"title": "ok", "description": "caf\xe9 au lait"}'
    response = await alice.client.post("/api/workflows", content=body, headers={"Content-Type": "application/json"})
    assert response.status_code == 400
    offset = body.index(b"caf") + 3
    assert response.json()["detail"] == (
        f"the request body is not valid UTF-8: byte 0xe9 at offset {offset} (invalid continuation byte)"
    )


async def test_a_body_that_is_not_json_is_a_415_on_every_json_endpoint(server: Server, alice: Account) -> None:
    objects = await objects_of(server, alice)
    before = await everything_of(alice)
    for endpoint in (e for e in endpoints(server) if e.json_body):
        url = objects.url(endpoint)
        for content_type in NOT_JSON:
            headers = {} if content_type is None else {"Content-Type": content_type}
            response = await alice.client.request(endpoint.method, url, content=b"{}", headers=headers)
            assert response.status_code == 415, f"{endpoint} as {content_type}: {response.status_code}"
            assert "application/json" in response.json()["detail"] or "UTF-8" in response.json()["detail"]
    assert await everything_of(alice) == before


async def test_json_in_any_json_spelling_gets_past_the_check(server: Server, alice: Account) -> None:
    """The control: what a client may send is not refused as a media type (whatever the handler makes of it)."""
    objects = await objects_of(server, alice)
    for endpoint in (e for e in endpoints(server) if e.json_body):
        url = objects.url(endpoint)
        for content_type in ("application/json", "Application/JSON; charset=UTF-8", "application/merge-patch+json"):
            response = await alice.client.request(
                endpoint.method, url, content=b"{}", headers={"Content-Type": content_type}
            )
            assert response.status_code not in (415, 500), f"{endpoint} as {content_type}: {response.text}"


async def test_an_empty_body_needs_no_content_type(alice: Account) -> None:
    workflow_id = (await alice.client.post("/api/workflows", json=linear(1))).json()["id"]
    started = await alice.client.post(f"/api/workflows/{workflow_id}/runs")
    assert started.status_code == 202, started.text
    hooked = await alice.client.post(f"/hooks/{workflow_id}", content=b"")
    assert hooked.status_code == 202, hooked.text


async def test_a_webhook_caller_must_send_utf8_but_may_label_its_json_as_it_likes(
    server: Server, alice: Account
) -> None:
    workflow_id = (await alice.client.post("/api/workflows", json=linear(1))).json()["id"]
    secret = (await alice.client.post(f"/api/workflows/{workflow_id}/webhook/secret")).json()["secret"]
    async with server.client(headers={"X-Flowdeck-Secret": secret}) as caller:
        assert "POST /hooks/{workflow_id:str}" not in {str(e) for e in endpoints(server) if e.json_body}
        json_type = {"Content-Type": "application/json"}
        bad = await caller.post(f"/hooks/{workflow_id}", content=b'{"a": "\xff"}', headers=json_type)
        assert bad.status_code == 400 and "UTF-8" in bad.json()["detail"]
        form = {"Content-Type": "application/x-www-form-urlencoded"}  # what curl -d says
        labelled = await caller.post(f"/hooks/{workflow_id}", content=b'{"order": 1}', headers=form)
        assert labelled.status_code == 202, labelled.text
        not_json = await caller.post(f"/hooks/{workflow_id}", content=b"order=1", headers=form)
        assert not_json.status_code == 400 and "not JSON" in not_json.json()["detail"]
    runs = (await alice.client.get("/api/runs", params={"workflowId": workflow_id})).json()["items"]
    assert len(runs) == 1 and runs[0]["trigger"] == "webhook"
