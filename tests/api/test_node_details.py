"""GET /api/runs/{id}/nodes/{nodeId}: one node of a run per loop iteration and per attempt, with the context
that attempt started with (its ``loop``, the run input, the upstream outputs of its own iteration), the
``ctx`` names its config reads, and its output, error and logs (the editor's node details view)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.api.conftest import Account, Server
from tests.api.test_run_projection import ITEMS, _loop
from tests.support.graphs import definition, edge, end, node

pytestmark = pytest.mark.asyncio(loop_scope="module")


async def _run(server: Server, alice: Account, graph: dict[str, Any], run_input: Any = None) -> str:
    created = await alice.client.post("/api/workflows", json=graph)
    assert created.status_code == 201, created.text
    started = await alice.client.post(f"/api/workflows/{created.json()['id']}/runs", json={"input": run_input})
    assert started.status_code == 202, started.text
    run_id = str(started.json()["instanceId"])
    await server.engine.wait_for_run(run_id, 30)
    return run_id


async def _detail(alice: Account, run_id: str, node_id: str, **query: Any) -> dict[str, Any]:
    answer = await alice.client.get(f"/api/runs/{run_id}/nodes/{node_id}", params=query)
    assert answer.status_code == 200, answer.text
    return dict(answer.json())


async def test_a_loop_iteration_shows_the_context_it_received(server: Server, alice: Account) -> None:
    run_id = await _run(server, alice, _loop({}), {"who": "ada"})
    work = await _detail(alice, run_id, "work", iteration="1")
    assert work["status"] == "COMPLETED" and work["attempt"] == 1
    assert [(a["attempt"], a["status"]) for a in work["attempts"]] == [(1, "COMPLETED")]
    assert work["input"]["loop"] == {"item": 20, "index": 1, "count": len(ITEMS)}
    assert work["input"]["input"] == {"who": "ada"}
    assert work["reads"] == ["loop"]  # its output template reads ctx.loop
    assert work["output"] == 40
    assert work["config"]["output"] == "{{ ctx.loop.item * 2 }}"
    assert not any(key.startswith("__node_") for key in work["input"])

    after = await _detail(alice, run_id, "after", iteration="3")
    assert after["input"]["work"] == 80  # the output of work in its own iteration, not another's
    assert after["input"]["loop"]["index"] == 3 and after["reads"] == ["work"]
    assert after["output"] == 80

    start = await _detail(alice, run_id, "start")
    assert start["input"] == {"input": {"who": "ada"}} and start["iteration"] == ""


async def test_each_attempt_shows_its_own_error_and_output(server: Server, alice: Account) -> None:
    graph = definition(
        [
            node("start", "start"),
            node(
                "flaky",
                config={"failTimes": 2, "output": "{{ ctx.input.n + 1 }}"},
                retry={"maxAttempts": 3, "backoffSeconds": 0.01},
            ),
            end(params={"n": "{{ ctx.flaky }}"}),
        ],
        [edge("start", "flaky"), edge("flaky", "end")],
    )
    run_id = await _run(server, alice, graph, {"n": 41})
    latest = await _detail(alice, run_id, "flaky")
    assert [(a["attempt"], a["status"]) for a in latest["attempts"]] == [(1, "FAILED"), (2, "FAILED"), (3, "COMPLETED")]
    assert latest["attempt"] == 3 and latest["output"] == 42 and latest["error"] is None
    assert "planned failure on attempt 1" in latest["attempts"][0]["error"]

    first = await _detail(alice, run_id, "flaky", attempt=1)
    assert first["attempt"] == 1 and first["status"] == "FAILED" and first["output"] is None
    assert "planned failure on attempt 1" in first["error"]
    assert first["input"] == {"input": {"n": 41}, "start": {"started": True, "inputReceived": {"n": 41}}}

    missing = await alice.client.get(f"/api/runs/{run_id}/nodes/flaky", params={"attempt": 7})
    assert missing.status_code == 404 and "no attempt 7" in missing.json()["detail"]


async def test_a_node_that_never_started_shows_what_it_would_have_received(server: Server, alice: Account) -> None:
    failing = {"failTimes": "{{ 9 if ctx.loop.index == 1 else 0 }}", "retryable": False}
    run_id = await _run(server, alice, _loop(failing))
    after = await _detail(alice, run_id, "after", iteration="1")
    assert after["status"] == "CANCELLED" and after["attempt"] == 0 and after["attempts"] == []
    assert after["input"]["loop"]["item"] == 20 and "work" not in after["input"]  # work failed there
    work = await _detail(alice, run_id, "work", iteration="1")
    assert work["status"] == "FAILED" and "planned failure" in work["error"]
    end_node = await _detail(alice, run_id, "end")
    assert end_node["status"] == "CANCELLED" and end_node["attempts"] == []


async def test_the_scope_and_the_node_are_checked(server: Server, alice: Account, mallory: Account) -> None:
    run_id = await _run(server, alice, _loop({}))
    no_iteration = await alice.client.get(f"/api/runs/{run_id}/nodes/work")
    assert no_iteration.status_code == 400 and "iteration" in no_iteration.json()["detail"]
    top_level = await alice.client.get(f"/api/runs/{run_id}/nodes/start", params={"iteration": "1"})
    assert top_level.status_code == 400 and "leave out iteration" in top_level.json()["detail"]
    bad = await alice.client.get(f"/api/runs/{run_id}/nodes/work", params={"iteration": "x"})
    assert bad.status_code == 400
    unknown = await alice.client.get(f"/api/runs/{run_id}/nodes/nope")
    assert unknown.status_code == 404 and "nope" in unknown.json()["detail"]
    other_tenant = await mallory.client.get(f"/api/runs/{run_id}/nodes/start")
    assert other_tenant.status_code == 404
