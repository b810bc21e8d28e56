"""Workflows over HTTP: create, read, immutable versions with stale-save conflicts, delete, list, validate."""

from __future__ import annotations

from typing import Any

import pytest

from tests.api.conftest import Account, Server
from tests.support.graphs import definition, edge, end, linear, node

pytestmark = pytest.mark.asyncio(loop_scope="module")


def tagged(tag: str) -> dict[str, Any]:
    """start -> end, whose run output says which version ran."""
    return definition([node("start", "start"), end(params={"ran": tag})], [edge("start", "end")]) | {"title": tag}


async def test_a_created_workflow_comes_back_whole_with_its_id_and_version(alice: Account) -> None:
    body = linear(2) | {"title": "Order triage", "description": "sorts orders", "options": {"timeoutSeconds": 60}}
    created = await alice.client.post("/api/workflows", json=body)
    assert created.status_code == 201
    workflow = created.json()
    assert workflow["version"] == 1 and workflow["title"] == "Order triage"
    assert workflow["nodes"] == body["nodes"] and workflow["edges"] == body["edges"]
    assert workflow["options"] == {"timeoutSeconds": 60} and workflow["description"] == "sorts orders"

    fetched = await alice.client.get(f"/api/workflows/{workflow['id']}")
    assert fetched.status_code == 200 and fetched.json() == workflow
    listed = (await alice.client.get("/api/workflows")).json()
    assert [w["id"] for w in listed["items"]] == [workflow["id"]] and listed["nextCursor"] is None
    assert listed["items"][0]["version"] == 1


async def test_saving_makes_a_new_version_and_a_stale_save_is_a_conflict(alice: Account) -> None:
    workflow = (await alice.client.post("/api/workflows", json=tagged("v1"))).json()
    url = f"/api/workflows/{workflow['id']}"

    saved = await alice.client.put(url, json=tagged("v2") | {"version": 1})
    assert saved.status_code == 200 and saved.json()["version"] == 2 and saved.json()["title"] == "v2"

    stale = await alice.client.put(url, json=tagged("v2-from-an-old-tab") | {"version": 1})
    assert stale.status_code == 409
    assert stale.json()["extra"] == {"latestVersion": 2} and "version 2" in stale.json()["detail"]

    versions = (await alice.client.get(f"{url}/versions")).json()
    assert [(v["version"], v["title"]) for v in versions["items"]] == [(2, "v2"), (1, "v1")]
    old = (await alice.client.get(f"{url}/versions/1")).json()
    assert old["version"] == 1 and old["title"] == "v1" and old["nodes"] == tagged("v1")["nodes"]
    assert (await alice.client.get(f"{url}/versions/3")).status_code == 404
    assert (await alice.client.get(url)).json()["title"] == "v2"


async def test_a_run_keeps_the_version_it_started_on(server: Server, alice: Account) -> None:
    workflow = (await alice.client.post("/api/workflows", json=tagged("v1"))).json()
    url = f"/api/workflows/{workflow['id']}"
    first = (await alice.client.post(f"{url}/runs", json={"input": {}})).json()["instanceId"]
    await alice.client.put(url, json=tagged("v2") | {"version": 1})
    second = (await alice.client.post(f"{url}/runs", json={"input": {}})).json()["instanceId"]
    for run_id in (first, second):
        await server.engine.wait_for_run(run_id, 10)

    runs = [(await alice.client.get(f"/api/runs/{r}")).json() for r in (first, second)]
    assert [(r["version"], r["output"]) for r in runs] == [(1, {"ran": "v1"}), (2, {"ran": "v2"})]


async def test_a_deleted_workflow_is_gone_but_its_runs_stay_readable(server: Server, alice: Account) -> None:
    workflow = (await alice.client.post("/api/workflows", json=tagged("v1"))).json()
    url = f"/api/workflows/{workflow['id']}"
    run_id = (await alice.client.post(f"{url}/runs")).json()["instanceId"]
    await server.engine.wait_for_run(run_id, 10)

    assert (await alice.client.delete(url)).status_code == 204
    for response in (
        await alice.client.get(url),
        await alice.client.get(f"{url}/versions"),
        await alice.client.put(url, json=tagged("v2") | {"version": 1}),
        await alice.client.post(f"{url}/runs", json={"input": 1}),
        await alice.client.delete(url),
    ):
        assert response.status_code == 404
    assert (await alice.client.get("/api/workflows")).json()["items"] == []
    assert (await alice.client.get(f"/api/runs/{run_id}")).json()["output"] == {"ran": "v1"}


async def test_the_workflow_list_pages_with_a_cursor(alice: Account) -> None:
    ids = [(await alice.client.post("/api/workflows", json=tagged(f"w{i}"))).json()["id"] for i in range(5)]
    seen: list[str] = []
    cursor = None
    for _ in range(5):
        params: dict[str, Any] = {"limit": 2} | ({"cursor": cursor} if cursor else {})
        page = (await alice.client.get("/api/workflows", params=params)).json()
        seen += [w["id"] for w in page["items"]]
        cursor = page["nextCursor"]
        if cursor is None:
            break
    assert seen == ids[::-1]  # most recently saved first, each once
    assert (await alice.client.get("/api/workflows", params={"cursor": "not-a-cursor"})).status_code == 400


async def test_validate_lists_every_problem_without_saving(alice: Account) -> None:
    good = await alice.client.post("/api/workflows/validate", json=linear(1))
    assert good.status_code == 200 and good.json()["valid"] is True

    bad = definition(
        [node("start", "start"), node("a", "mystery"), node("b", "delay", config={"seconds": "soon"}), node("c")],
        [edge("start", "b"), edge("b", "c"), edge("c", "b"), edge("c", "ghost")],
    )
    response = await alice.client.post("/api/workflows/validate", json=bad)
    assert response.status_code == 200
    result = response.json()
    assert result["valid"] is False
    codes = {(p["code"], p.get("nodeId")) for p in result["problems"]}
    assert {("unknown_node_type", "a"), ("invalid_config", "b"), ("missing_end", None)} <= codes
    assert any(p["code"] == "cycle" and "b -> c -> b" in p["message"] for p in result["problems"])
    assert any(p["code"] == "edge_missing_node" for p in result["problems"])
    unstorable = linear(1)
    unstorable["nodes"][1]["label"] = "nul\x00"
    result = (await alice.client.post("/api/workflows/validate", json=unstorable)).json()
    assert result["valid"] is False and result["problems"][0]["path"] == "nodes[1].label"
    assert (await alice.client.get("/api/workflows")).json()["items"] == []


async def test_sticky_notes_are_stored_with_the_version_and_bad_ones_are_named(server: Server, alice: Account) -> None:
    notes = [
        {"id": "n1", "text": "Ask ops first", "position": {"x": 10, "y": 20}, "size": {"width": 200, "height": 100}}
    ]
    created = await alice.client.post("/api/workflows", json=tagged("v1") | {"notes": notes})
    assert created.status_code == 201 and created.json()["notes"] == notes
    url = f"/api/workflows/{created.json()['id']}"
    saved = await alice.client.put(url, json=tagged("v2") | {"version": 1})
    assert saved.json()["notes"] == []
    assert (await alice.client.get(f"{url}/versions/1")).json()["notes"] == notes

    run_id = (await alice.client.post(f"{url}/runs", json={"input": {}})).json()["instanceId"]
    await server.engine.wait_for_run(run_id, 10)
    assert (await alice.client.get(f"/api/runs/{run_id}")).json()["output"] == {"ran": "v2"}

    test_run = await alice.client.post("/api/test-runs", json=tagged("t") | {"notes": notes, "input": {}})
    assert test_run.status_code == 202
    await server.engine.wait_for_run(test_run.json()["instanceId"], 10)
    assert (await alice.client.get(f"/api/runs/{test_run.json()['instanceId']}")).json()["output"] == {"ran": "t"}

    bad = await alice.client.put(
        url, json=tagged("v3") | {"version": 2, "notes": [{"id": "n1", "text": 5, "position": {}}]}
    )
    assert bad.status_code == 400
    assert [(p["code"], p["path"]) for p in bad.json()["extra"]] == [
        ("invalid_note", "notes[0].text"),
        ("invalid_note", "notes[0].position"),
    ]


async def test_a_version_keeps_its_author_and_message_and_an_old_one_is_restored_as_the_next(
    alice: Account, mallory: Account
) -> None:
    workflow = (await alice.client.post("/api/workflows", json=tagged("v1"))).json()
    url = f"/api/workflows/{workflow['id']}"
    saved = await alice.client.put(url, json=tagged("v2") | {"version": 1, "versionMessage": "  tagged v2  "})
    assert saved.status_code == 200, saved.text
    too_long = await alice.client.put(url, json=tagged("v3") | {"version": 2, "versionMessage": "x" * 501})
    assert too_long.status_code == 400 and "versionMessage" in too_long.text

    restored = await alice.client.post(f"{url}/versions/1/restore")
    assert restored.status_code == 201, restored.text
    assert restored.json()["version"] == 3 and restored.json()["title"] == "v1"
    assert restored.json()["nodes"] == tagged("v1")["nodes"]
    again = await alice.client.post(f"{url}/versions/2/restore", json={"versionMessage": "back to v2"})
    assert again.json()["version"] == 4

    versions = (await alice.client.get(f"{url}/versions")).json()["items"]
    assert [(v["version"], v["title"], v["author"], v["message"]) for v in versions] == [
        (4, "v2", alice.email, "back to v2"),
        (3, "v1", alice.email, "Restored version 1"),
        (2, "v2", alice.email, "tagged v2"),  # trimmed
        (1, "v1", alice.email, None),
    ]
    assert (await alice.client.post(f"{url}/versions/9/restore")).status_code == 404
    # another tenant's workflow is a 404, and nothing is saved
    assert (await mallory.client.post(f"{url}/versions/1/restore")).status_code == 404
    assert (await alice.client.get(url)).json()["version"] == 4
