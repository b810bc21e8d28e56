"""Sub-workflows over HTTP: the call shows on both runs, a workflow's inputs, the searchable list, and
references checked per tenant (another tenant's workflow is "not found", on save and at run time)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.api.conftest import Account, Server
from tests.support.graphs import definition, edge, end, node

pytestmark = pytest.mark.asyncio(loop_scope="module")


TIER = "{{ ctx.input.get('tier', 'basic') }}"


def child(title: str = "Enrich customer") -> dict[str, Any]:
    return definition(
        [
            node("start", "start"),
            node("work", config={"output": {"name": "{{ ctx.input.name }}", "tier": TIER}}),
            end(params={"customer": "{{ ctx.work }}"}),
        ],
        [edge("start", "work"), edge("work", "end", "success")],
    ) | {"title": title}


def caller(child_id: str) -> dict[str, Any]:
    return definition(
        [
            node("start", "start"),
            node("call", "workflow", config={"workflowId": child_id, "input": {"name": "{{ ctx.input.who }}"}}),
            end(params={"got": "{{ ctx.call.customer.name }}"}),
        ],
        [edge("start", "call"), edge("call", "end", "success")],
    ) | {"title": "Caller"}


async def create(account: Account, graph: dict[str, Any]) -> str:
    response = await account.client.post("/api/workflows", json=graph)
    assert response.status_code == 201, response.text
    return str(response.json()["id"])


async def test_both_runs_show_the_call(server: Server, alice: Account) -> None:
    child_id = await create(alice, child())
    caller_id = await create(alice, caller(child_id))

    started = await alice.client.post(f"/api/workflows/{caller_id}/runs", json={"input": {"who": "Ada"}})
    run_id = started.json()["instanceId"]
    await server.engine.wait_for_run(run_id, 15)

    run = (await alice.client.get(f"/api/runs/{run_id}")).json()
    assert run["status"] == "COMPLETED", run["error"]
    assert run["output"] == {"got": "Ada"}
    assert run["parentInstanceId"] is None
    child_run_id = run["nodes"]["call"]["childInstanceId"]
    child_run = (await alice.client.get(f"/api/runs/{child_run_id}")).json()
    assert child_run["trigger"] == "workflow" and child_run["workflowId"] == child_id
    assert (child_run["parentInstanceId"], child_run["parentNodeId"]) == (run_id, "call")
    assert child_run["input"] == {"name": "Ada"}
    listed = (await alice.client.get("/api/runs", params={"workflowId": child_id})).json()["items"]
    assert [(r["instanceId"], r["parentInstanceId"]) for r in listed] == [(child_run_id, run_id)]
    events = (await alice.client.get(f"/api/runs/{run_id}/events")).json()["items"]
    call = [e for e in events if e["eventType"] == "SYSTEM_SET" and e["nodeId"] == "call"]
    assert [e["payload"]["__call"]["instanceId"] for e in call] == [child_run_id]  # the log records the call


async def test_a_workflow_lists_the_inputs_its_nodes_read(alice: Account) -> None:
    child_id = await create(alice, child())
    workflow = (await alice.client.get(f"/api/workflows/{child_id}")).json()
    assert workflow["inputs"] == ["name", "tier"]


async def test_the_workflow_list_searches_titles(alice: Account) -> None:
    wanted = await create(alice, child("Notify on-call"))
    await create(alice, child("Enrich customer"))
    found = (await alice.client.get("/api/workflows", params={"q": "ON-CALL"})).json()["items"]
    assert [w["id"] for w in found] == [wanted]
    assert (await alice.client.get("/api/workflows", params={"q": "100%_"})).json()["items"] == []


async def test_another_tenants_workflow_cannot_be_called(server: Server, alice: Account, mallory: Account) -> None:
    alices = await create(alice, child())

    refused = await mallory.client.post("/api/workflows", json=caller(alices))
    assert refused.status_code == 400
    problems = refused.json()["extra"]
    assert [(p["code"], p["nodeId"], p["path"]) for p in problems] == [
        ("workflow_not_found", "call", "config.workflowId")
    ]
    test_run = await mallory.client.post("/api/test-runs", json=caller(alices))
    assert test_run.status_code == 400 and test_run.json()["extra"][0]["code"] == "workflow_not_found"

    # Saved while it existed, then deleted: the call fails at run time, naming the workflow.
    own = await create(mallory, child())
    caller_id = await create(mallory, caller(own))
    assert (await mallory.client.delete(f"/api/workflows/{own}")).status_code == 204
    started = await mallory.client.post(f"/api/workflows/{caller_id}/runs", json={"input": {"who": "Eve"}})
    run_id = started.json()["instanceId"]
    await server.engine.wait_for_run(run_id, 15)
    run = (await mallory.client.get(f"/api/runs/{run_id}")).json()
    assert run["status"] == "FAILED"
    assert run["nodes"]["call"]["error"] == f"workflow {own} does not exist (deleted, or never saved)"


async def test_validation_warns_when_a_workflow_calls_itself(alice: Account) -> None:
    workflow_id = await create(alice, child())
    looping = caller(workflow_id)

    checked = await alice.client.post("/api/workflows/validate", params={"workflowId": workflow_id}, json=looping)
    assert checked.status_code == 200
    body = checked.json()
    assert body["valid"] is True
    assert [(p["code"], p["severity"], p["nodeId"]) for p in body["problems"]] == [("calls_itself", "warning", "call")]
    saved = await alice.client.put(f"/api/workflows/{workflow_id}", json=looping | {"version": 1})
    assert saved.status_code == 200  # a warning does not block saving


async def test_a_workflow_as_read_saves_back_with_its_inputs(alice: Account) -> None:
    workflow_id = await create(alice, child())
    read = (await alice.client.get(f"/api/workflows/{workflow_id}")).json()
    assert read["inputs"] == ["name", "tier"]

    saved = await alice.client.put(f"/api/workflows/{workflow_id}", json=read | {"title": "Renamed"})
    assert saved.status_code == 200, saved.text
    assert saved.json()["title"] == "Renamed" and saved.json()["version"] == 2
