"""Flow control over HTTP (issue 23 item 4): ``priority`` on POST /api/workflows/{id}/runs, a queued run's
``waitingReason`` and ``priority`` on GET /api/runs/{id}, and every bad option or priority a 400 naming it."""

from __future__ import annotations

from typing import Any

import pytest

from tests.api.conftest import Account, Server
from tests.support.graphs import definition, edge, end, node

pytestmark = pytest.mark.asyncio(loop_scope="module")


def _sleeper(seconds: float, **options: Any) -> dict[str, Any]:
    return definition(
        [node("start", "start"), node("work", config={"sleep": seconds}), end()],
        [edge("start", "work"), edge("work", "end", "success")],
        **options,
    )


async def create(account: Account, graph: dict[str, Any]) -> str:
    response = await account.client.post("/api/workflows", json=graph)
    assert response.status_code == 201, response.text
    return str(response.json()["id"])


async def test_a_queued_run_shows_why_it_waits_and_its_priority(server: Server, alice: Account) -> None:
    options = {"concurrency": {"limit": 1, "key": "{{ ctx.input.customer }}"}, "priority": 70}
    workflow_id = await create(alice, _sleeper(0.5, **options))
    runs = []
    for priority in (None, 90):
        body: dict[str, Any] = {"input": {"customer": "acme"}}
        if priority is not None:
            body["priority"] = priority
        response = await alice.client.post(f"/api/workflows/{workflow_id}/runs", json=body)
        assert response.status_code == 202, response.text
        runs.append(response.json()["instanceId"])

    queued = (await alice.client.get(f"/api/runs/{runs[1]}")).json()
    assert queued["status"] == "PENDING" and queued["priority"] == 90
    assert "options.concurrency allows 1 run(s)" in queued["waitingReason"] and "'acme'" in queued["waitingReason"]
    first = (await alice.client.get(f"/api/runs/{runs[0]}")).json()
    assert first["priority"] == 70 and first["waitingReason"] is None  # the workflow's options.priority

    finished = await server.engine.wait_for_run(runs[1], 30)
    assert finished.status.value == "COMPLETED"
    assert (await alice.client.get(f"/api/runs/{runs[1]}")).json()["waitingReason"] is None


@pytest.mark.parametrize("priority", [0, 101, 2.5, "high", True])
async def test_a_bad_priority_is_a_400_naming_it(alice: Account, priority: Any) -> None:
    workflow_id = await create(alice, _sleeper(0.0))
    response = await alice.client.post(f"/api/workflows/{workflow_id}/runs", json={"priority": priority})
    assert response.status_code == 400, response.text
    assert "priority" in response.text


@pytest.mark.parametrize(
    ("options", "field"),
    [
        ({"concurrency": {"limit": 0}}, "options.concurrency.limit"),
        ({"concurrency": {"limit": 10_001}}, "options.concurrency.limit"),
        ({"concurrency": {"key": "{{ ctx.input.a }}"}}, "options.concurrency.limit"),
        ({"concurrency": {"limit": 2, "strategy": "drop"}}, "options.concurrency.strategy"),
        ({"concurrency": {"limit": 2, "key": "{{ ctx.input.a "}}, "options.concurrency.key"),
        ({"concurrency": {"limit": 2, "max": 3}}, "options.concurrency.max"),
        ({"concurrency": 3}, "options.concurrency"),
        ({"debounce": {"seconds": 0}}, "options.debounce.seconds"),
        ({"debounce": {"seconds": "5"}}, "options.debounce.seconds"),
        ({"debounce": {"seconds": 5, "key": ""}}, "options.debounce.key"),
        ({"priority": 0}, "options.priority"),
        ({"priority": 50.5}, "options.priority"),
    ],
)
async def test_bad_flow_options_are_a_400_naming_the_field(alice: Account, options: dict[str, Any], field: str) -> None:
    response = await alice.client.post("/api/workflows", json=_sleeper(0.0, **options))
    assert response.status_code == 400, response.text
    paths = [problem.get("path") for problem in response.json()["extra"]]
    assert field in paths, response.text


async def test_a_key_failing_on_the_input_is_a_400_naming_it(alice: Account) -> None:
    workflow_id = await create(alice, _sleeper(0.0, debounce={"seconds": 1, "key": "{{ ctx.input.doc.id }}"}))
    response = await alice.client.post(f"/api/workflows/{workflow_id}/runs", json={"input": {"other": 1}})
    assert response.status_code == 400, response.text
    assert "options.debounce.key" in response.text


async def _hook_secret(account: Account, workflow_id: str) -> str:
    response = await account.client.post(f"/api/workflows/{workflow_id}/webhook/secret")
    assert response.status_code == 201, response.text
    return str(response.json()["secret"])


async def test_a_webhook_run_takes_the_workflows_priority_or_its_query_parameter(
    server: Server, alice: Account
) -> None:
    workflow_id = await create(alice, _sleeper(0.0, priority=70))
    secret = await _hook_secret(alice, workflow_id)
    async with server.client() as anonymous:
        runs = {}
        for query in ("", "?priority=95", "?priority=1"):
            answer = await anonymous.post(
                f"/hooks/{workflow_id}{query}", json={}, headers={"X-Flowdeck-Secret": secret}
            )
            assert answer.status_code == 202, answer.text
            runs[query] = answer.json()["instanceId"]
    for query, expected in (("", 70), ("?priority=95", 95), ("?priority=1", 1)):
        detail = (await alice.client.get(f"/api/runs/{runs[query]}")).json()
        assert detail["trigger"] == "webhook" and detail["priority"] == expected, (query, detail)


@pytest.mark.parametrize("priority", ["0", "101", "2.5", "high"])
async def test_a_bad_webhook_priority_is_a_400_naming_it(server: Server, alice: Account, priority: str) -> None:
    workflow_id = await create(alice, _sleeper(0.0))
    secret = await _hook_secret(alice, workflow_id)
    async with server.client() as anonymous:
        answer = await anonymous.post(
            f"/hooks/{workflow_id}?priority={priority}", json={}, headers={"X-Flowdeck-Secret": secret}
        )
    assert answer.status_code == 400, answer.text
    assert "priority" in answer.text


def _flaky_group(strategy: str) -> dict[str, Any]:
    """``work`` fails its first ``input.fail`` attempts (no automatic retry) after ``input.sleep`` seconds."""
    work = node(
        "work",
        config={"failTimes": "{{ ctx.input.fail }}", "sleep": "{{ ctx.input.sleep }}"},
        retry={"maxAttempts": 1},
    )
    return definition(
        [node("start", "start"), work, end()],
        [edge("start", "work"), edge("work", "end", "success")],
        concurrency={"limit": 1, "strategy": strategy},
    )


async def _failed_and_holder(server: Server, alice: Account, strategy: str) -> tuple[str, str]:
    workflow_id = await create(alice, _flaky_group(strategy))
    runs = []
    for body in ({"fail": 1, "sleep": 0}, {"fail": 0, "sleep": 3}):
        response = await alice.client.post(f"/api/workflows/{workflow_id}/runs", json={"input": body})
        assert response.status_code == 202, response.text
        runs.append(response.json()["instanceId"])
        if len(runs) == 1:
            assert (await server.engine.wait_for_run(runs[0], 30)).status.value == "FAILED"
    return runs[0], runs[1]


async def test_a_retry_past_the_limit_queues_saying_why_or_is_a_409(server: Server, alice: Account) -> None:
    failed, holder = await _failed_and_holder(server, alice, "queue")
    response = await alice.client.post(f"/api/runs/{failed}/retry")
    assert response.status_code == 202, response.text
    queued = (await alice.client.get(f"/api/runs/{failed}")).json()
    assert queued["status"] == "PENDING" and "options.concurrency allows 1 run(s)" in queued["waitingReason"]
    assert (await server.engine.wait_for_run(failed, 30)).status.value == "COMPLETED"

    failed, holder = await _failed_and_holder(server, alice, "cancel_newest")
    refused = await alice.client.post(f"/api/runs/{failed}/retry")
    assert refused.status_code == 409, refused.text
    assert "was not retried" in refused.text and "options.concurrency.limit (1)" in refused.text
    assert (await alice.client.get(f"/api/runs/{failed}")).json()["status"] == "FAILED"
    assert (await server.engine.wait_for_run(holder, 30)).status.value == "COMPLETED"
