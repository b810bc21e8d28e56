"""Malformed and hostile input: a 4xx that names the field or node, nothing partly stored, strings kept exactly."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.api.conftest import Account, Server
from tests.support.graphs import definition, edge, end, linear, node

pytestmark = pytest.mark.asyncio(loop_scope="module")

HOSTILE = [
    "Robert'); DROP TABLE workflows;--",
    "' OR '1'='1' --",
    "<script>alert('x')</script>",
    '"><img src=x onerror=alert(1)>',
    "{{ ctx.__class__.__mro__ }}",
    '\\u0000 is not a NUL, \\ is a backslash, " is a quote',
    "emoji 🚀, rtl \u202eevil, zero\u200bwidth, 日本語",
]


def nested(depth: int) -> Any:
    value: Any = "bottom"
    for _ in range(depth):
        value = {"a": value}
    return value


async def nothing_stored(alice: Account) -> None:
    assert (await alice.client.get("/api/workflows")).json()["items"] == []
    assert (await alice.client.get("/api/runs")).json()["items"] == []


async def test_an_invalid_graph_is_a_400_listing_every_problem_and_nothing_is_stored(alice: Account) -> None:
    graph = definition(
        [
            node("start", "start"),
            node("a", "teleport"),
            node("b", "delay", config={"seconds": {"not": "a number"}}),
            node("c", "condition", config={"branches": "all of them"}),
            node("d"),
            end(),
        ],
        [edge("start", "b"), edge("b", "d"), edge("d", "b"), edge("d", "nowhere"), edge("start", "c")],
    )
    for url in ("/api/workflows", "/api/test-runs"):
        response = await alice.client.post(url, json=graph)
        assert response.status_code == 400, url
        body = response.json()
        assert body["status_code"] == 400 and "error" in body["detail"]
        problems = {(p["code"], p.get("nodeId")) for p in body["extra"]}
        assert {("unknown_node_type", "a"), ("invalid_config", "b"), ("invalid_config", "c")} <= problems
        assert any(p["code"] == "cycle" and "b -> d -> b" in p["message"] for p in body["extra"])
        assert any(p["code"] == "edge_missing_node" and "nowhere" in p["message"] for p in body["extra"])
    await nothing_stored(alice)


async def test_a_pin_for_a_node_that_is_not_in_the_graph_is_refused(alice: Account) -> None:
    response = await alice.client.post("/api/test-runs", json={**linear(1), "pinned": {"ghost": 1}})
    assert response.status_code == 400 and response.json()["extra"][0]["path"] == "pinned.ghost"
    await nothing_stored(alice)


async def test_an_invalid_save_keeps_the_previous_version(alice: Account) -> None:
    workflow = (await alice.client.post("/api/workflows", json=linear(1))).json()
    broken = await alice.client.put(f"/api/workflows/{workflow['id']}", json={"nodes": [], "edges": [], "version": 1})
    assert broken.status_code == 400 and {p["code"] for p in broken.json()["extra"]} >= {"missing_start"}
    assert (await alice.client.get(f"/api/workflows/{workflow['id']}")).json() == workflow
    assert len((await alice.client.get(f"/api/workflows/{workflow['id']}/versions")).json()["items"]) == 1


async def test_a_body_over_one_mebibyte_is_a_413(alice: Account) -> None:
    big = linear(1) | {"description": "x" * (1024 * 1024)}
    for url in ("/api/workflows", "/api/test-runs", "/api/workflows/validate"):
        assert (await alice.client.post(url, json=big)).status_code == 413, url
    await nothing_stored(alice)


async def test_deeply_nested_json_is_refused_with_the_field_named(alice: Account) -> None:
    workflow_id = (await alice.client.post("/api/workflows", json=linear(1))).json()["id"]
    response = await alice.client.post(f"/api/workflows/{workflow_id}/runs", json={"input": nested(100)})
    assert response.status_code == 400
    assert response.json()["extra"][0]["path"].startswith("input.a.a") and "nested" in response.json()["detail"]

    graph = linear(1)
    graph["nodes"][1]["config"] = {"output": nested(80)}
    response = await alice.client.post("/api/workflows", json=graph)
    assert response.status_code == 400 and response.json()["extra"][0]["path"].startswith("nodes[1].config.output")

    very_deep = '{"input": ' + "[" * 50_000 + "]" * 50_000 + "}"
    response = await alice.client.post(
        f"/api/workflows/{workflow_id}/runs", content=very_deep, headers={"Content-Type": "application/json"}
    )
    assert response.status_code == 400 and "nested too deeply" in response.json()["detail"]
    assert (await alice.client.get("/api/runs")).json()["items"] == []


async def test_nul_characters_are_refused_wherever_they_hide(alice: Account) -> None:
    graph = linear(1)
    graph["nodes"][1]["label"] = "bad\x00label"
    response = await alice.client.post("/api/workflows", json=graph)
    assert response.status_code == 400 and response.json()["extra"][0]["path"] == "nodes[1].label"

    response = await alice.client.post("/api/workflows", json=linear(1) | {"title": "nul\x00title"})
    assert response.status_code == 400 and "title" in response.text

    graph = linear(1)
    graph["nodes"][1]["config"] = {"output": {"key\x00": 1}}
    assert (await alice.client.post("/api/workflows", json=graph)).status_code == 400

    response = await alice.client.post("/api/test-runs", json={**linear(1), "input": {"q": "a\x00b"}})
    assert response.status_code == 400 and response.json()["extra"][0]["path"] == "input.q"
    response = await alice.client.post("/api/tokens", json={"name": "\x00"})
    assert response.status_code == 400
    response = await alice.client.post("/api/auth/login", json={"email": "a\x00@b.c", "password": "x"})
    assert response.status_code == 400
    assert (await alice.client.get("/api/runs", params={"workflowId": "a\x00b"})).status_code == 400
    assert (await alice.client.get("/api/runs/a%00b")).status_code in (400, 404)
    await nothing_stored(alice)


async def test_hostile_strings_come_back_exactly_as_stored(server: Server, alice: Account) -> None:
    graph = linear(1)
    graph["nodes"][1]["label"] = HOSTILE[2]
    literal = {text: text for text in HOSTILE if "{{" not in text}  # step outputs are templates: keep them literal
    graph["nodes"][1]["config"] = {"output": literal}
    body = graph | {"title": HOSTILE[0], "description": "\n".join(HOSTILE)}
    created = await alice.client.post("/api/workflows", json=body)
    assert created.status_code == 201, created.text
    assert created.headers["content-type"].startswith("application/json")
    assert created.headers["x-content-type-options"] == "nosniff"
    workflow = (await alice.client.get(f"/api/workflows/{created.json()['id']}")).json()
    assert workflow["title"] == HOSTILE[0] and workflow["description"] == "\n".join(HOSTILE)
    assert workflow["nodes"] == graph["nodes"]

    run_input = {"texts": HOSTILE, "big": 123456789012345678901234567890, "float": 3.14}
    run_id = (await alice.client.post(f"/api/workflows/{workflow['id']}/runs", json={"input": run_input})).json()
    await server.engine.wait_for_run(run_id["instanceId"], 10)
    run = (await alice.client.get(f"/api/runs/{run_id['instanceId']}")).json()
    assert run["input"] == run_input and run["nodes"]["s1"]["output"] == literal
    assert (await alice.client.get("/api/workflows")).json()["items"][0]["title"] == HOSTILE[0]


async def test_malformed_bodies_are_a_400_naming_the_field(alice: Account) -> None:
    for content, field in (
        ("{not json", None),
        ("[1, 2, 3]", None),
        (json.dumps(linear(1) | {"title": 123}), "title"),
        (json.dumps(linear(1) | {"nodes": "all"}), "nodes"),
        (json.dumps(linear(1) | {"title": "x" * 201}), "title"),
    ):
        headers = {"Content-Type": "application/json"}
        response = await alice.client.post("/api/workflows", content=content, headers=headers)
        assert response.status_code == 400, content
        assert field is None or field in response.text
    await nothing_stored(alice)


async def test_bad_parameters_are_a_400(alice: Account) -> None:
    workflow_id = (await alice.client.post("/api/workflows", json=linear(1))).json()["id"]
    for url in (
        "/api/runs?status=SLEEPING",
        "/api/runs?isTest=perhaps",
        "/api/runs?limit=0",
        "/api/runs?limit=100000",
        "/api/runs?cursor=%21%21%21",
        f"/api/workflows/{workflow_id}/versions/99999999999999",
        f"/api/workflows/{workflow_id}/versions/0",
        "/api/workflows/" + "x" * 100,
    ):
        response = await alice.client.get(url)
        assert response.status_code == 400, url
    stale = await alice.client.put(f"/api/workflows/{workflow_id}", json=linear(1) | {"version": 2**40})
    assert stale.status_code == 400
