"""Runs over HTTP when things go wrong (issue 14): scheduled start and deadline, unknown body fields,
retry with the original or the latest version, attempts counted per retry, terminal means terminal."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest

from tests.api.conftest import Account, Server
from tests.support.graphs import definition, edge, end, linear, node

pytestmark = pytest.mark.asyncio(loop_scope="module")


async def create(alice: Account, graph: dict[str, Any]) -> dict[str, Any]:
    response = await alice.client.post("/api/workflows", json=graph)
    assert response.status_code == 201, response.text
    return dict(response.json())


async def run_of(alice: Account, run_id: str) -> dict[str, Any]:
    return dict((await alice.client.get(f"/api/runs/{run_id}")).json())


def _failing(fail_times: int, max_attempts: int = 1) -> dict[str, Any]:
    return definition(
        [
            node("start", "start"),
            node("first"),
            node("second", config={"failTimes": fail_times}, retry={"maxAttempts": max_attempts}),
            end(params={"second": "{{ ctx.second.attempt }}"}),
        ],
        [edge("start", "first"), edge("first", "second"), edge("second", "end")],
    )


async def test_a_scheduled_run_is_pending_with_its_start_time_then_runs(server: Server, alice: Account) -> None:
    workflow = await create(alice, linear(1))
    due = time.time() + 0.8
    started = await alice.client.post(f"/api/workflows/{workflow['id']}/runs", json={"input": 1, "availableAt": due})
    assert started.status_code == 202, started.text
    run_id = started.json()["instanceId"]
    pending = await run_of(alice, run_id)
    assert pending["status"] == "PENDING" and pending["availableAt"] == due
    listed = (await alice.client.get("/api/runs", params={"workflowId": workflow["id"]})).json()["items"]
    assert [(r["status"], r["availableAt"]) for r in listed] == [("PENDING", due)]
    run = await server.engine.wait_for_run(run_id, 10)
    assert run.status == "COMPLETED" and run.started_at is not None and run.started_at >= due
    assert (await run_of(alice, run_id))["availableAt"] is None


async def test_a_run_past_its_deadline_fails_and_its_node_is_cancelled(server: Server, alice: Account) -> None:
    graph = definition(
        [node("start", "start"), node("long", config={"sleep": 30}), end()],
        [
            edge("start", "long"),
            edge("long", "end"),
        ],
    )
    workflow = await create(alice, graph)
    deadline = time.time() + 0.5
    started = await alice.client.post(f"/api/workflows/{workflow['id']}/runs", json={"deadlineAt": deadline})
    run_id = started.json()["instanceId"]
    run = await server.engine.wait_for_run(run_id, 10)  # the sweep runs every second
    assert run.status == "FAILED"
    detail = await run_of(alice, run_id)
    assert detail["error"] == f"run failed: it passed its deadline (deadlineAt {deadline:g})"
    assert detail["nodes"]["long"]["status"] == "CANCELLED"
    events = (await alice.client.get(f"/api/runs/{run_id}/events")).json()["items"]
    assert [e["nodeId"] for e in events if e["eventType"] == "NODE_CANCELLED"] == ["long"]


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"deadlineAt": 1000.0}, "deadlineAt"),  # long past
        ({"availableAt": time.time() + 100, "deadlineAt": time.time() + 50}, "deadlineAt"),
        ({"availabelAt": time.time() + 100}, "availabelAt"),  # a typo is never ignored
        ({"input": 1, "priority": 500}, "priority"),  # out of 1-100
        ({"input": 1, "urgency": 3}, "urgency"),
    ],
)
async def test_impossible_or_unknown_run_fields_are_a_400_naming_them(
    alice: Account, body: dict[str, Any], field: str
) -> None:
    workflow = await create(alice, linear(1))
    response = await alice.client.post(f"/api/workflows/{workflow['id']}/runs", json=body)
    assert response.status_code == 400, response.text
    assert field in response.text
    runs = (await alice.client.get("/api/runs", params={"workflowId": workflow["id"]})).json()["items"]
    assert runs == []  # nothing started


async def test_the_webhook_takes_schedule_and_deadline_as_query_parameters(server: Server, alice: Account) -> None:
    workflow = await create(alice, linear(1))
    due = time.time() + 30
    response = await alice.client.post(f"/hooks/{workflow['id']}", params={"availableAt": due}, json={"a": 1})
    assert response.status_code == 202, response.text
    run = await run_of(alice, response.json()["instanceId"])
    assert run["status"] == "PENDING" and run["availableAt"] == due and run["trigger"] == "webhook"
    assert (await alice.client.post(f"/api/runs/{run['instanceId']}/cancel")).status_code == 200
    cancelled = await run_of(alice, run["instanceId"])
    assert cancelled["status"] == "CANCELLED" and cancelled["nodes"]["start"]["status"] == "CANCELLED"
    late = await alice.client.post(f"/hooks/{workflow['id']}", params={"deadlineAt": 5}, json={})
    assert late.status_code == 400 and "deadlineAt" in late.text


@pytest.mark.parametrize(
    ("path", "body", "field"),
    [
        ("/api/workflows", {**linear(1), "titel": "typo"}, "titel"),
        ("/api/test-runs", {**linear(1), "inputs": {}}, "inputs"),
        ("/api/tokens", {"name": "ci", "scope": "all"}, "scope"),
        ("/api/auth/login", {"email": "a@b.c", "password": "x", "remember": True}, "remember"),
    ],
)
async def test_every_request_body_refuses_unknown_fields(
    alice: Account, path: str, body: dict[str, Any], field: str
) -> None:
    response = await alice.client.post(path, json=body)
    assert response.status_code == 400, response.text
    assert field in response.text


async def test_sticky_notes_are_a_known_definition_field(alice: Account) -> None:
    notes = [{"id": "n1", "text": "ask ops first", "position": {"x": 0, "y": 0}}]
    workflow = await create(alice, {**linear(1), "notes": notes})
    saved = (await alice.client.get(f"/api/workflows/{workflow['id']}/versions/1")).json()
    assert saved["version"] == 1


async def test_retry_with_the_latest_version_runs_the_fix_and_keeps_completed_outputs(
    server: Server, alice: Account
) -> None:
    workflow = await create(alice, _failing(fail_times=9))
    run_id = (await alice.client.post(f"/api/workflows/{workflow['id']}/runs")).json()["instanceId"]
    assert (await server.engine.wait_for_run(run_id, 10)).status == "FAILED"
    fixed = {**_failing(fail_times=0), "version": 1}
    saved = await alice.client.put(f"/api/workflows/{workflow['id']}", json=fixed)
    assert saved.status_code == 200, saved.text

    refused = await alice.client.post(f"/api/runs/{run_id}/retry", json={"version": "newest"})
    assert refused.status_code == 400 and "version" in refused.text
    retried = await alice.client.post(f"/api/runs/{run_id}/retry", json={"version": "latest"})
    assert retried.status_code == 202, retried.text
    assert retried.json()["nodeIds"] == ["second"]
    run = await server.engine.wait_for_run(run_id, 10)
    assert run.status == "COMPLETED" and run.output == {"second": 2}
    detail = await run_of(alice, run_id)
    assert detail["version"] == 2 and detail["retry"] == 1
    assert detail["nodes"]["first"]["attempt"] == 1  # kept, not run again
    events = (await alice.client.get(f"/api/runs/{run_id}/events")).json()["items"]
    moves = [e["payload"] for e in events if e["eventType"] == "RUN_STATUS" and e["payload"].get("version")]
    assert moves == [{"status": "RUNNING", "reason": "partial retry", "version": 2}]


async def test_retry_with_the_original_version_fails_the_same_way(server: Server, alice: Account) -> None:
    workflow = await create(alice, _failing(fail_times=9))
    run_id = (await alice.client.post(f"/api/workflows/{workflow['id']}/runs")).json()["instanceId"]
    assert (await server.engine.wait_for_run(run_id, 10)).status == "FAILED"
    await alice.client.put(f"/api/workflows/{workflow['id']}", json={**_failing(fail_times=0), "version": 1})
    assert (await alice.client.post(f"/api/runs/{run_id}/retry", json={"version": "original"})).status_code == 202
    run = await server.engine.wait_for_run(run_id, 10)
    assert run.status == "FAILED" and run.workflow_version == 1
    assert (await alice.client.post(f"/api/runs/{run_id}/retry", json={})).status_code == 202  # default: original


async def test_attempts_count_per_retry(server: Server, alice: Account) -> None:
    workflow = await create(alice, _failing(fail_times=9, max_attempts=2))
    run_id = (await alice.client.post(f"/api/workflows/{workflow['id']}/runs")).json()["instanceId"]
    assert (await server.engine.wait_for_run(run_id, 20)).status == "FAILED"
    first = (await run_of(alice, run_id))["nodes"]["second"]
    assert (first["attempt"], first["attemptInRetry"], first.get("retry", 0)) == (2, 2, 0)
    await alice.client.post(f"/api/runs/{run_id}/retry")
    for _ in range(500):  # the retried run fails again after its two attempts
        detail = await run_of(alice, run_id)
        if detail["status"] == "FAILED" and detail["retry"] == 1:
            break
        await asyncio.sleep(0.02)
    second = detail["nodes"]["second"]
    assert (second["attempt"], second["attemptInRetry"], second["retry"]) == (4, 2, 1)  # "attempt 2 of 2, retry 1"
    # the timeline and the node details view count the same way, attempt by attempt
    timeline = (await alice.client.get(f"/api/runs/{run_id}/timeline")).json()["items"]
    bars = [b for b in timeline if b["nodeId"] == "second"]
    assert [(b["attempt"], b["retry"], b["attemptInRetry"], b["status"]) for b in bars] == [
        (1, 0, 1, "FAILED"),
        (2, 0, 2, "FAILED"),
        (3, 1, 1, "FAILED"),  # the partial retry: "attempt 1 of 2, retry 1"
        (4, 1, 2, "FAILED"),
    ]
    shown = (await alice.client.get(f"/api/runs/{run_id}/nodes/second")).json()
    assert [(a["attempt"], a["retry"], a["attemptInRetry"]) for a in shown["attempts"]] == [
        (b["attempt"], b["retry"], b["attemptInRetry"]) for b in bars
    ]


async def test_a_test_run_cannot_move_to_a_latest_version(server: Server, alice: Account) -> None:
    run_id = (await alice.client.post("/api/test-runs", json=_failing(fail_times=9))).json()["instanceId"]
    assert (await server.engine.wait_for_run(run_id, 10)).status == "FAILED"
    refused = await alice.client.post(f"/api/runs/{run_id}/retry", json={"version": "latest"})
    assert refused.status_code == 409 and "test run" in refused.text
