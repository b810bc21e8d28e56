"""The run view after a run ends inside a loop (SPEC §2, docs/api.md "Loop bodies"): in GET /api/runs/{id}
and the timeline nothing is left PENDING or RUNNING, iterations are listed under the body nodes that ran
in them (with the ``ctx.loop`` they received and their output), a body node's own status sums its
iterations up, and attempts are the same 1-based numbers in both."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from tests.api.conftest import Account, Server
from tests.api.test_socketio import Watcher
from tests.support.graphs import definition, edge, end, node

pytestmark = pytest.mark.asyncio(loop_scope="module")

UNFINISHED = {"PENDING", "DISPATCHED", "RUNNING", "RETRYING", "WAITING"}
ITEMS = [10, 20, 30, 40, 50]


def _loop(body_config: dict[str, Any], concurrency: int = 1, **options: Any) -> dict[str, Any]:
    """start -> each (loop over ITEMS) -> work -> after (the body); each -> end on ``done``."""
    work = node(
        "work",
        config={"output": "{{ ctx.loop.item * 2 }}", **body_config},
        retry={"maxAttempts": 3, "backoffSeconds": 0.01},
        errorHandling="fail_workflow",
    )
    return definition(
        [
            node("start", "start"),
            node("each", "loop", config={"items": ITEMS, "concurrency": concurrency}),
            work,
            node("after", config={"output": "{{ ctx.work }}"}),
            end(params={"result": "{{ ctx.each }}"}),
        ],
        [edge("start", "each"), edge("each", "work", "loop"), edge("work", "after"), edge("each", "end", "done")],
        **options,
    )


async def _start(alice: Account, graph: dict[str, Any]) -> str:
    created = await alice.client.post("/api/workflows", json=graph)
    assert created.status_code == 201, created.text
    started = await alice.client.post(f"/api/workflows/{created.json()['id']}/runs", json={})
    assert started.status_code == 202, started.text
    return str(started.json()["instanceId"])


async def _ended(server: Server, alice: Account, run_id: str) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    await server.engine.wait_for_run(run_id, 30)
    run = (await alice.client.get(f"/api/runs/{run_id}")).json()
    timeline = (await alice.client.get(f"/api/runs/{run_id}/timeline")).json()["items"]
    return run, timeline


async def _iteration_started(alice: Account, run_id: str, node_id: str, iteration: str) -> None:
    for _ in range(500):
        run = (await alice.client.get(f"/api/runs/{run_id}")).json()
        if run["nodes"].get(node_id, {}).get("iterations", {}).get(iteration, {}).get("status") == "RUNNING":
            return
        await asyncio.sleep(0.02)
    raise AssertionError(f"{node_id}[{iteration}] never started")


def _views(run: dict[str, Any]) -> list[tuple[str, str, dict[str, Any]]]:
    found = []
    for node_id, view in run["nodes"].items():
        found.append((node_id, "", view))
        found += [(node_id, key, each) for key, each in (view.get("iterations") or {}).items()]
    return found


def _assert_nothing_unfinished(run: dict[str, Any], timeline: list[dict[str, Any]]) -> None:
    assert [(n, it, v["status"]) for n, it, v in _views(run) if v["status"] in UNFINISHED] == []
    assert [(b["nodeId"], b["iteration"], b["status"]) for b in timeline if b["status"] in UNFINISHED] == []
    assert all(b["attempt"] >= 1 for b in timeline)  # attempts count from 1 everywhere


def _assert_iterations_under_the_body(run: dict[str, Any], timeline: list[dict[str, Any]]) -> None:
    """No phantom entries under the loop; each listed iteration carries its ctx.loop; attempts match the bars."""
    assert "iterations" not in run["nodes"]["each"]
    assert all(b["iteration"] == "" for b in timeline if b["nodeId"] == "each")
    bars = {(b["nodeId"], b["iteration"]): b["attempt"] for b in timeline}
    for node_id in ("work", "after"):
        for key, each in (run["nodes"].get(node_id, {}).get("iterations") or {}).items():
            index = int(key)
            assert each["loop"] == {"item": ITEMS[index], "index": index, "count": len(ITEMS)}
            if (node_id, key) in bars:
                assert each["attempt"] >= 1 and each["attempt"] == bars[(node_id, key)]
                assert each["attemptInRetry"] == each["attempt"]
            else:  # it never started in an iteration that began: no attempt, no bar
                assert each["status"] == "CANCELLED" and each["attempt"] == 0


@pytest.mark.parametrize("concurrency", [1, 2])
async def test_a_failure_inside_a_loop_leaves_a_finished_projection(
    server: Server, alice: Account, concurrency: int
) -> None:
    failing = {"failTimes": "{{ 9 if ctx.loop.index == 2 else 0 }}", "retryable": False}
    run_id = await _start(alice, _loop(failing, concurrency))
    run, timeline = await _ended(server, alice, run_id)
    assert run["status"] == "FAILED"
    _assert_nothing_unfinished(run, timeline)
    _assert_iterations_under_the_body(run, timeline)

    work = run["nodes"]["work"]
    assert work["status"] == "FAILED"  # the body node sums up its iterations: one failed
    assert work["attempt"] == 1 and work["attemptInRetry"] == 1 and "planned failure" in work["error"]
    iterations = work["iterations"]
    assert iterations["2"]["status"] == "FAILED" and iterations["2"]["attempt"] == 1
    for key, each in iterations.items():  # with two at a time, one in flight when 2 failed is cancelled
        assert each["status"] in ({"FAILED"} if key == "2" else {"COMPLETED", "CANCELLED"})
        assert each["output"] == (ITEMS[int(key)] * 2 if each["status"] == "COMPLETED" else None)
    after = run["nodes"]["after"]
    if concurrency == 1:
        assert set(iterations) == {"0", "1", "2"}  # 3 and 4 never started: not listed
        assert iterations["0"]["status"] == iterations["1"]["status"] == "COMPLETED"
        assert set(after["iterations"]) == {"0", "1", "2"}
        assert after["iterations"]["1"]["output"] == 40
    # iteration 2 began, and the node after the failure never ran in it: CANCELLED there (SPEC §2), which
    # its summary says (not COMPLETED, as if the loop had finished)
    assert after["iterations"]["2"]["status"] == "CANCELLED" and after["iterations"]["2"]["attempt"] == 0
    assert after["status"] == "CANCELLED"
    assert set(after["iterations"]) == set(iterations)  # in every iteration that began, every body node is listed
    assert run["nodes"]["each"]["status"] == "CANCELLED"
    assert run["nodes"]["end"]["status"] == "CANCELLED"  # never started: listed, and CANCELLED
    assert await _live_snapshot(server, alice, run_id) == _statuses(run)  # the live view says the same


def _statuses(nodes: dict[str, Any]) -> dict[tuple[str, str], tuple[str, int, Any]]:
    return {(n, it): (v["status"], v["attempt"], v.get("loop")) for n, it, v in _views(nodes)}


async def _live_snapshot(server: Server, alice: Account, run_id: str) -> dict[tuple[str, str], tuple[str, int, Any]]:
    """What a client joining the finished run's Socket.IO room is sent first."""
    watcher = Watcher()
    await watcher.sio.connect(server.url, auth={"token": alice.token}, transports=["websocket"])
    try:
        assert await watcher.join(run_id) == {"ok": True}
        async with asyncio.timeout(10):
            while not watcher.of_run(run_id):
                await asyncio.sleep(0.01)
    finally:
        await watcher.sio.disconnect()
    [(name, snapshot)] = watcher.of_run(run_id)
    assert name == "workflow_run_snapshot"
    return _statuses(snapshot)


async def test_a_run_cancelled_mid_loop_leaves_a_finished_projection(server: Server, alice: Account) -> None:
    run_id = await _start(alice, _loop({"sleep": "{{ 3 if ctx.loop.index == 1 else 0 }}"}))
    await _iteration_started(alice, run_id, "work", "1")
    cancelled = await alice.client.post(f"/api/runs/{run_id}/cancel")
    assert cancelled.status_code == 200, cancelled.text
    run, timeline = await _ended(server, alice, run_id)
    assert run["status"] == "CANCELLED"
    _assert_nothing_unfinished(run, timeline)
    _assert_iterations_under_the_body(run, timeline)
    work = run["nodes"]["work"]
    assert set(work["iterations"]) == {"0", "1"}
    assert work["iterations"]["0"]["status"] == "COMPLETED" and work["iterations"]["1"]["status"] == "CANCELLED"
    assert work["status"] == "CANCELLED" and work["attempt"] == 1
    after = run["nodes"]["after"]
    assert after["iterations"]["0"]["status"] == "COMPLETED"  # it ran in iteration 0 only
    assert after["iterations"]["1"]["status"] == "CANCELLED" and after["status"] == "CANCELLED"
    assert run["nodes"]["end"]["status"] == "CANCELLED"
    assert {b["status"] for b in timeline if (b["nodeId"], b["iteration"]) == ("work", "1")} == {"CANCELLED"}


async def test_a_run_timing_out_mid_loop_leaves_a_finished_projection(server: Server, alice: Account) -> None:
    run_id = await _start(alice, _loop({"sleep": "{{ 4 if ctx.loop.index == 1 else 0 }}"}, timeoutSeconds=1))
    run, timeline = await _ended(server, alice, run_id)
    assert run["status"] == "FAILED" and "timed out" in run["error"]
    _assert_nothing_unfinished(run, timeline)
    _assert_iterations_under_the_body(run, timeline)
    work = run["nodes"]["work"]
    assert work["iterations"]["1"]["status"] == "CANCELLED" and work["status"] == "CANCELLED"
    assert run["nodes"]["each"]["status"] == "CANCELLED"
