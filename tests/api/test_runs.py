"""Runs over HTTP: production and test runs, lists and filters, detail, log pages, timeline, cancel, retry."""

from __future__ import annotations

import asyncio

import httpx
import pytest
import sqlalchemy as sa

from flowdeck.storage.tables import instance_logs, instances
from tests.api.conftest import PASSWORD, Account, Server
from tests.support.graphs import definition, edge, end, linear, node

pytestmark = pytest.mark.asyncio(loop_scope="module")


async def create(alice: Account, graph: dict) -> str:
    response = await alice.client.post("/api/workflows", json=graph)
    assert response.status_code == 201, response.text
    return str(response.json()["id"])


async def node_reaches(alice: Account, run_id: str, node_id: str, status: str) -> None:
    for _ in range(200):
        run = (await alice.client.get(f"/api/runs/{run_id}")).json()
        if run["nodes"].get(node_id, {}).get("status") == status:
            return
        await asyncio.sleep(0.02)
    raise AssertionError(f"{node_id} never became {status}")


async def test_a_production_run_starts_with_202_and_reads_back_in_full(server: Server, alice: Account) -> None:
    workflow_id = await create(alice, linear(2))
    started = await alice.client.post(f"/api/workflows/{workflow_id}/runs", json={"input": {"items": [1, 2]}})
    assert started.status_code == 202
    run_id = started.json()["instanceId"]
    await server.engine.wait_for_run(run_id, 10)

    run = (await alice.client.get(f"/api/runs/{run_id}")).json()
    assert run["instanceId"] == run_id and run["workflowId"] == workflow_id and run["version"] == 1
    assert run["isTest"] is False and run["status"] == "COMPLETED" and run["error"] is None
    assert run["input"] == {"items": [1, 2]} and run["output"] == {"last": "s2"}
    assert run["startedAt"] <= run["completedAt"]
    assert set(run["nodes"]) == {"start", "s1", "s2", "end"}
    s1 = run["nodes"]["s1"]
    assert s1["status"] == "COMPLETED" and s1["attempt"] == 1 and s1["output"] == {"node": "s1", "attempt": 1}


async def test_runs_are_listed_newest_first_with_filters_and_pages(server: Server, alice: Account) -> None:
    first = await create(alice, linear(1))
    second = await create(alice, linear(1))
    run_ids = [
        (await alice.client.post(f"/api/workflows/{w}/runs")).json()["instanceId"] for w in (first, second, first)
    ]
    test_run = (await alice.client.post("/api/test-runs", json=linear(1))).json()["instanceId"]
    for run_id in [*run_ids, test_run]:
        await server.engine.wait_for_run(run_id, 10)

    everything = (await alice.client.get("/api/runs")).json()
    assert [r["instanceId"] for r in everything["items"]] == [test_run, *run_ids[::-1]]
    by_workflow = (await alice.client.get("/api/runs", params={"workflowId": first})).json()
    assert [r["instanceId"] for r in by_workflow["items"]] == [run_ids[2], run_ids[0]]
    tests_only = (await alice.client.get("/api/runs", params={"isTest": "true"})).json()
    assert [r["instanceId"] for r in tests_only["items"]] == [test_run]
    assert (await alice.client.get("/api/runs", params={"status": "FAILED"})).json()["items"] == []
    assert len((await alice.client.get("/api/runs", params={"status": "COMPLETED"})).json()["items"]) == 4

    page = (await alice.client.get("/api/runs", params={"limit": 3})).json()
    rest = (await alice.client.get("/api/runs", params={"limit": 3, "cursor": page["nextCursor"]})).json()
    assert [r["instanceId"] for r in page["items"] + rest["items"]] == [test_run, *run_ids[::-1]]
    assert rest["nextCursor"] is None


async def test_the_log_pages_in_order_and_the_timeline_has_a_row_per_attempt(server: Server, alice: Account) -> None:
    flaky = node("flaky", config={"failTimes": 1}, retry={"maxAttempts": 2, "backoffSeconds": 0.01})
    graph = definition([node("start", "start"), flaky, end()], [edge("start", "flaky"), edge("flaky", "end")])
    workflow_id = await create(alice, graph)
    run_id = (await alice.client.post(f"/api/workflows/{workflow_id}/runs")).json()["instanceId"]
    await server.engine.wait_for_run(run_id, 10)

    rows, cursor = [], None
    while True:
        page = (
            await alice.client.get(f"/api/runs/{run_id}/events", params={"limit": 4, "cursor": cursor or ""})
        ).json()
        rows += page["items"]
        cursor = page["nextCursor"]
        if cursor is None:
            break
    log_ids = [r["logId"] for r in rows]
    assert log_ids == sorted(set(log_ids)) and len(rows) > 8
    assert rows[0]["eventType"] == "INPUT_SET" and rows[-1]["eventType"] == "RUN_STATUS"
    assert [r["nodeAttempt"] for r in rows if r["eventType"] == "NODE_FAILED"] == [1]

    timeline = (await alice.client.get(f"/api/runs/{run_id}/timeline")).json()["items"]
    flaky_rows = [(r["attempt"], r["status"]) for r in timeline if r["nodeId"] == "flaky"]
    assert flaky_rows == [(1, "FAILED"), (2, "COMPLETED")]
    assert all(r["startedAt"] <= r["completedAt"] for r in timeline)
    assert [r["nodeId"] for r in timeline] == ["start", "flaky", "flaky", "end"]


async def test_cancel_stops_a_running_run_and_a_finished_one_is_a_conflict(server: Server, alice: Account) -> None:
    graph = definition(
        [node("start", "start"), node("slow", config={"sleep": 10}), end()],
        [edge("start", "slow"), edge("slow", "end")],
    )
    run_id = (await alice.client.post("/api/test-runs", json=graph)).json()["instanceId"]
    await node_reaches(alice, run_id, "slow", "RUNNING")

    cancelled = await alice.client.post(f"/api/runs/{run_id}/cancel")
    assert cancelled.status_code == 200 and cancelled.json()["status"] == "CANCELLED"
    run = (await alice.client.get(f"/api/runs/{run_id}")).json()
    assert run["status"] == "CANCELLED" and run["nodes"]["slow"]["status"] == "CANCELLED"
    again = await alice.client.post(f"/api/runs/{run_id}/cancel")
    assert again.status_code == 409 and "CANCELLED" in again.json()["detail"]


async def test_retry_reruns_only_the_failed_nodes_of_a_failed_run(server: Server, alice: Account) -> None:
    broken = node("broken", config={"failTimes": 1}, retry={"maxAttempts": 1}, errorHandling="fail_workflow")
    graph = definition(
        [node("start", "start"), node("ok"), broken, end()],
        [edge("start", "ok"), edge("ok", "broken"), edge("broken", "end")],
    )
    workflow_id = await create(alice, graph)
    run_id = (await alice.client.post(f"/api/workflows/{workflow_id}/runs")).json()["instanceId"]
    await server.engine.wait_for_run(run_id, 10)
    failed = (await alice.client.get(f"/api/runs/{run_id}")).json()
    assert failed["status"] == "FAILED" and "broken" in failed["error"]

    retried = await alice.client.post(f"/api/runs/{run_id}/retry")
    assert retried.status_code == 202 and retried.json()["nodeIds"] == ["broken"]
    await server.engine.wait_for_run(run_id, 10)
    run = (await alice.client.get(f"/api/runs/{run_id}")).json()
    assert run["status"] == "COMPLETED"
    assert (run["nodes"]["ok"]["attempt"], run["nodes"]["broken"]["attempt"]) == (1, 2)
    assert (await alice.client.post(f"/api/runs/{run_id}/retry")).status_code == 409
    # the list still says the run failed once and was retried (its page too: `retry`, and the timeline's bars)
    assert run["retry"] == 1
    other = (await alice.client.post(f"/api/workflows/{workflow_id}/runs")).json()["instanceId"]
    await server.engine.wait_for_run(other, 10)
    listed = (await alice.client.get("/api/runs", params={"workflowId": workflow_id})).json()["items"]
    assert {r["instanceId"]: (r["status"], r["retry"]) for r in listed} == {
        run_id: ("COMPLETED", 1),
        other: ("FAILED", 0),
    }
    bars = (await alice.client.get(f"/api/runs/{run_id}/timeline")).json()["items"]
    assert [(b["attempt"], b["status"]) for b in bars if b["nodeId"] == "broken"] == [(1, "FAILED"), (2, "COMPLETED")]


async def test_a_test_run_reads_its_graph_from_its_own_log_and_pins_complete_at_once(
    server: Server, alice: Account
) -> None:
    graph = definition(
        [node("start", "start"), node("fetch", config={"sleep": 30}), end(params={"got": "{{ ctx.fetch.rows }}"})],
        [edge("start", "fetch"), edge("fetch", "end")],
    )
    started = await alice.client.post(
        "/api/test-runs", json={**graph, "input": {"q": 1}, "pinned": {"fetch": {"rows": [1, 2]}}}
    )
    assert started.status_code == 202
    run_id = started.json()["instanceId"]
    await server.engine.wait_for_run(run_id, 10)

    run = (await alice.client.get(f"/api/runs/{run_id}")).json()
    assert run["isTest"] is True and run["workflowId"] is None and run["status"] == "COMPLETED"
    assert run["nodes"]["fetch"]["pinned"] is True and run["output"] == {"got": [1, 2]}
    events = (await alice.client.get(f"/api/runs/{run_id}/events", params={"limit": 200})).json()["items"]
    [system] = [e for e in events if e["eventType"] == "SYSTEM_SET"]
    assert system["payload"]["__workflowDefinition"]["nodes"] == graph["nodes"]
    assert (await alice.client.get("/api/workflows")).json()["items"] == []


async def test_deleting_a_test_run_stops_it_and_removes_every_row(server: Server, alice: Account) -> None:
    graph = definition(
        [node("start", "start"), node("slow", config={"sleep": 10}), end()],
        [edge("start", "slow"), edge("slow", "end")],
    )
    run_id = (await alice.client.post("/api/test-runs", json=graph)).json()["instanceId"]

    assert (await alice.client.delete(f"/api/test-runs/{run_id}")).status_code == 204
    assert (await alice.client.get(f"/api/runs/{run_id}")).status_code == 404
    assert (await alice.client.delete(f"/api/test-runs/{run_id}")).status_code == 404
    async with server.engine.db.read() as conn:
        for table in (instances, instance_logs):
            column = table.c.id if table is instances else table.c.instance_id
            count = (await conn.execute(sa.select(sa.func.count()).where(column == run_id))).scalar()
            assert count == 0, table.name
    assert await server.engine.state.count_jobs(run_id) == 0

    workflow_id = await create(alice, linear(1))
    production = (await alice.client.post(f"/api/workflows/{workflow_id}/runs")).json()["instanceId"]
    assert (await alice.client.delete(f"/api/test-runs/{production}")).status_code == 404
    assert (await alice.client.get(f"/api/runs/{production}")).status_code == 200


async def test_a_test_run_from_a_saved_workflow_is_listed_under_it_as_a_test(
    server: Server, alice: Account, mallory: Account
) -> None:
    workflow_id = await create(alice, linear(1))
    started = await alice.client.post("/api/test-runs", json={**linear(2), "workflowId": workflow_id})
    assert started.status_code == 202, started.text
    run_id = started.json()["instanceId"]
    await server.engine.wait_for_run(run_id, 10)

    listed = (await alice.client.get("/api/runs", params={"workflowId": workflow_id})).json()["items"]
    assert [(r["instanceId"], r["isTest"], r["version"], r["trigger"]) for r in listed] == [
        (run_id, True, None, "test")
    ]
    run = (await alice.client.get(f"/api/runs/{run_id}")).json()
    assert run["workflowId"] == workflow_id and set(run["nodes"]) == {"start", "s1", "s2", "end"}  # the graph sent
    production = (await alice.client.get("/api/runs", params={"workflowId": workflow_id, "isTest": "false"})).json()
    assert production["items"] == []
    assert (await mallory.client.get("/api/runs", params={"workflowId": workflow_id})).json()["items"] == []


async def test_a_test_run_cannot_be_filed_under_a_workflow_of_another_tenant(alice: Account, mallory: Account) -> None:
    theirs = await create(mallory, linear(1))
    refused = await alice.client.post("/api/test-runs", json={**linear(1), "workflowId": theirs})
    assert refused.status_code == 404 and "workflowId" in refused.json()["detail"]
    assert (await alice.client.get("/api/runs")).json()["items"] == []  # nothing was started
    assert (await mallory.client.get("/api/runs", params={"workflowId": theirs})).json()["items"] == []

    deleted = await create(alice, linear(1))
    assert (await alice.client.delete(f"/api/workflows/{deleted}")).status_code == 204
    gone = await alice.client.post("/api/test-runs", json={**linear(1), "workflowId": deleted})
    assert gone.status_code == 404
    bad = await alice.client.post("/api/test-runs", json={**linear(1), "workflowId": "../etc"})
    assert bad.status_code == 400 and "workflowId" in bad.text


async def test_runs_are_filtered_by_creation_time_and_found_by_an_id_prefix(server: Server, alice: Account) -> None:
    workflow_id = await create(alice, linear(1))
    run_ids = [(await alice.client.post(f"/api/workflows/{workflow_id}/runs")).json()["instanceId"] for _ in range(3)]
    for run_id in run_ids:
        await server.engine.wait_for_run(run_id, 10)
    day = 86_400.0
    created = {run_ids[0]: 10 * day, run_ids[1]: 11 * day, run_ids[2]: 12 * day + 5}  # three days in 1970
    async with server.engine.db.transaction() as conn:
        for run_id, at in created.items():
            await conn.execute(instances.update().where(instances.c.id == run_id).values(created_at=at))

    async def listed(**params: object) -> list[str]:
        response = await alice.client.get("/api/runs", params=params)
        assert response.status_code == 200, response.text
        return [r["instanceId"] for r in response.json()["items"]]

    assert await listed(**{"from": 11 * day}) == [run_ids[2], run_ids[1]]
    assert await listed(to=11 * day) == [run_ids[0]]  # "to" is exclusive
    assert await listed(**{"from": 11 * day, "to": 12 * day}) == [run_ids[1]]
    assert await listed(**{"from": 12 * day, "to": 13 * day, "workflowId": workflow_id}) == [run_ids[2]]
    assert await listed(**{"from": 20 * day, "to": 21 * day}) == []

    assert await listed(idPrefix=run_ids[1][:8]) == [run_ids[1]]
    assert await listed(idPrefix=run_ids[1]) == [run_ids[1]]
    assert await listed(idPrefix="zz_") == []  # "_" is not a wildcard
    page = await listed(idPrefix=run_ids[0][:1], limit=1)
    assert page and all(r.startswith(run_ids[0][:1]) for r in page)

    backwards = await alice.client.get("/api/runs", params={"from": 12 * day, "to": 11 * day})
    assert backwards.status_code == 400 and "from" in backwards.json()["detail"]
    assert (await alice.client.get("/api/runs", params={"from": "yesterday"})).status_code == 400
    assert (await alice.client.get("/api/runs", params={"idPrefix": "a%"})).status_code == 400


async def test_a_run_started_from_the_editor_says_so_and_the_list_filters_by_trigger(
    server: Server, alice: Account, anonymous: httpx.AsyncClient
) -> None:
    workflow_id = await create(alice, linear(1))
    session = (await anonymous.post("/api/auth/login", json={"email": alice.email, "password": PASSWORD})).json()
    from_editor = await anonymous.post(
        f"/api/workflows/{workflow_id}/runs", json={"input": {}}, headers={"X-CSRF-Token": session["csrfToken"]}
    )
    assert from_editor.status_code == 202, from_editor.text
    from_script = await alice.client.post(f"/api/workflows/{workflow_id}/runs", json={"input": {}})
    editor_run, api_run = from_editor.json()["instanceId"], from_script.json()["instanceId"]

    assert (await alice.client.get(f"/api/runs/{editor_run}")).json()["trigger"] == "editor"
    assert (await alice.client.get(f"/api/runs/{api_run}")).json()["trigger"] == "api"
    for trigger, expected in (("editor", [editor_run]), ("api", [api_run])):
        page = await alice.client.get("/api/runs", params={"workflowId": workflow_id, "trigger": trigger})
        assert [r["instanceId"] for r in page.json()["items"]] == expected
