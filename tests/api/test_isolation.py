"""Tenant isolation: on every endpoint, another tenant's object is a 404 (never a 403) and never listed."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import httpx
import pytest

from tests.api.conftest import Account, Server
from tests.support.graphs import definition, edge, end, linear, node

pytestmark = pytest.mark.asyncio(loop_scope="module")

PUBLIC = {("GET", "/api/health"), ("POST", "/api/auth/login")}
# A wait node's resume link and form: the token in the path is the credential (docs/security.md), so an
# unknown one is a 404 to anyone, signed in or not.
BY_TOKEN = {("POST", "/resume/{token}"), ("GET", "/forms/{token}"), ("POST", "/forms/{token}")}
SHARED = {("POST", "/api/examples/{example_id}")}  # the same examples for every tenant: no object of one
SOURCE = {"name": "warehouse", "kind": "http", "config": {"baseUrl": "http://127.0.0.1:9"}}
QUERY = {"name": "ping", "parameters": [], "method": "GET", "path": "/ping"}
WIDGET = {"name": "all of it", "type": "json", "config": {}}


async def alices_objects(server: Server, alice: Account) -> dict[str, str]:
    workflow = (await alice.client.post("/api/workflows", json=linear(1))).json()["id"]
    run = (await alice.client.post(f"/api/workflows/{workflow}/runs")).json()["instanceId"]
    await server.engine.wait_for_run(run, 10)
    slow = definition(
        [node("start", "start"), node("slow", config={"sleep": 30}), end()],
        [edge("start", "slow"), edge("slow", "end")],
    )
    test_run = (await alice.client.post("/api/test-runs", json=slow)).json()["instanceId"]
    token = (await alice.client.post("/api/tokens", json={"name": "alice's"})).json()["id"]
    source = (await alice.client.post("/api/data-sources", json=SOURCE)).json()["id"]
    query = (await alice.client.post("/api/queries", json={**QUERY, "dataSourceId": source})).json()["id"]
    widget = (await alice.client.post("/api/widgets", json={**WIDGET, "workflowId": workflow})).json()["id"]
    waiting = (await alice.client.post("/api/test-runs", json=APPROVAL)).json()["instanceId"]
    return {
        "approval_id": await approval_of(alice, waiting),
        "approval_run": waiting,
        "workflow_id": workflow,
        "instance_id": run,
        "token_id": token,
        "version": "1",
        "test_run": test_run,
        "source_id": source,
        "query_id": query,
        "widget_id": widget,
    }


APPROVAL = definition(
    [node("start", "start"), node("ok", "wait", config={"resumeOn": "approval"}), end()],
    [edge("start", "ok"), edge("ok", "end", "success")],
    timeoutSeconds=600,
)


async def approval_of(alice: Account, run_id: str) -> str:
    """The id of the approval the run waits on, once it is parked (the event that proves it)."""
    for _ in range(300):
        node_state = (await alice.client.get(f"/api/runs/{run_id}")).json()["nodes"].get("ok", {})
        if node_state.get("status") == "WAITING":
            return str(node_state["waitingFor"]["approvalId"])
        await asyncio.sleep(0.05)
    raise AssertionError("the approval never parked")


def request_for(method: str, path: str, ids: dict[str, str]) -> tuple[str, dict[str, Any]]:
    """The concrete URL and a valid body for one operation, aimed at alice's objects."""
    url = path.replace("{workflow_id}", ids["workflow_id"]).replace("{token_id}", ids["token_id"])
    url = url.replace("{version}", ids["version"])
    url = url.replace("{source_id}", ids["source_id"]).replace("{query_id}", ids["query_id"])
    url = url.replace("{widget_id}", ids["widget_id"]).replace("{approval_id}", ids["approval_id"])
    url = url.replace("{instance_id}", ids["test_run"] if path.startswith("/api/test-runs") else ids["instance_id"])
    body: dict[str, Any] = {}
    if path.startswith("/api/widgets/") and method in ("POST", "PUT"):
        body = {"json": {**WIDGET, "workflowId": ids["workflow_id"]} if method == "PUT" else {}}
    elif path.endswith("/widget"):
        body = {"params": {"type": "json", "config": "{}"}}
    elif method == "PUT" and path.startswith(("/api/data-sources", "/api/queries")):
        body = {"json": {"name": "renamed"}}
    elif method == "POST" and path.endswith("/preview"):
        body = {"json": {"args": {}}}
    elif method == "PUT":
        body = {"json": linear(1) | {"version": 1}}
    elif method == "POST" and path.startswith("/api/approvals/"):
        body = {"json": {"decision": "approve"}}
    elif method == "POST" and path.endswith("/runs"):
        body = {"json": {"input": {"x": 1}}}
    return url, body


def anonymize(body: dict[str, Any], ids: dict[str, str]) -> str:
    text = str(body)
    for key, value in ids.items():
        if key != "version":
            text = text.replace(value, "<id>")
    return text


async def operations(client: httpx.AsyncClient) -> list[tuple[str, str]]:
    schema = (await client.get("/schema/openapi.json")).json()
    return [
        (method.upper(), path) for path, item in schema["paths"].items() for method in item if method != "parameters"
    ]


async def test_every_endpoint_answers_404_for_another_tenants_objects(
    server: Server, alice: Account, mallory: Account
) -> None:
    ids = await alices_objects(server, alice)
    with_ids = [(m, p) for m, p in await operations(alice.client) if "{" in p and (m, p) not in SHARED]
    assert len(with_ids) >= 13  # every object endpoint of SPEC §5 in this API
    unknown = {key: (value if key == "version" else str(uuid.uuid4())) for key, value in ids.items()}
    for method, path in with_ids:
        url, body = request_for(method, path, ids)
        response = await mallory.client.request(method, url, **body)
        assert response.status_code == 404, f"{method} {path}: {response.status_code} {response.text}"
        # ... and says exactly what it says about an id that exists nowhere.
        nowhere = await mallory.client.request(method, request_for(method, path, unknown)[0], **body)
        assert nowhere.status_code == 404
        assert anonymize(response.json(), ids) == anonymize(nowhere.json(), unknown), f"{method} {path}"

    # A body the validator would refuse still gets the 404 first: nothing tells mallory the id exists.
    bad = await mallory.client.put(f"/api/workflows/{ids['workflow_id']}", json={"nodes": "nope", "version": 1})
    assert bad.status_code in (400, 404)
    invalid_graph = await mallory.client.put(f"/api/workflows/{ids['workflow_id']}", json={"nodes": [], "version": 1})
    assert invalid_graph.status_code == 404

    # Nothing of alice's shows up in mallory's lists, or changed.
    for url in ("/api/workflows", "/api/runs", f"/api/runs?workflowId={ids['workflow_id']}", "/api/approvals"):
        assert (await mallory.client.get(url)).json()["items"] == [], url
    assert ids["token_id"] not in [t["id"] for t in (await mallory.client.get("/api/tokens")).json()["items"]]
    assert (await alice.client.get(f"/api/workflows/{ids['workflow_id']}")).json()["version"] == 1
    assert (await alice.client.get(f"/api/runs/{ids['test_run']}")).json()["status"] == "RUNNING"
    assert (await alice.client.get(f"/api/approvals/{ids['approval_id']}")).json()["status"] == "pending"
    assert ids["token_id"] in [t["id"] for t in (await alice.client.get("/api/tokens")).json()["items"]]
    await alice.client.post(f"/api/runs/{ids['test_run']}/cancel")
    await alice.client.post(f"/api/runs/{ids['approval_run']}/cancel")


async def test_every_endpoint_but_health_and_login_needs_authentication(
    server: Server, alice: Account, anonymous: httpx.AsyncClient
) -> None:
    ids = await alices_objects(server, alice)
    for method, path in await operations(alice.client):
        url, body = request_for(method, path, ids)
        response = await anonymous.request(method, url, **body)
        expected = {200} if (method, path) in PUBLIC and method == "GET" else {401}
        if (method, path) in PUBLIC and method == "POST":
            expected = {400}  # login: public, but this body is not a login
        if (method, path) in BY_TOKEN:
            expected = {404}
        assert response.status_code in expected, f"{method} {path}: {response.status_code}"
    await alice.client.post(f"/api/runs/{ids['test_run']}/cancel")
    await alice.client.post(f"/api/runs/{ids['approval_run']}/cancel")
