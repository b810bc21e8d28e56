"""Issue 21, "One run, 2.7 GB", over HTTP as an attacker would: a loop whose body returns a large
string per item ends FAILED at the run's output budget, naming FLOWDECK_MAX_RUN_BYTES; reading a run
answers a bounded body, a large output truncated with its size and the address of the endpoint that
returns it in full (the same tenant rules: another tenant's run is a 404). Both databases."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_asyncio

from flowdeck.engine.output_view import SHOWN_OUTPUT_BYTES, SHOWN_READ_BYTES
from flowdeck.storage.database import Database
from tests.api.conftest import Account, Server, serve
from tests.api.test_socketio import Watcher
from tests.support.graphs import definition, edge, end, node

pytestmark = pytest.mark.asyncio(loop_scope="module")

BUDGET = 2 * 1024 * 1024
ITEM_CHARS = 300_000  # past what one read shows in full, well within the budget


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def server(api_db: Database, tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Server]:
    async with serve(api_db, Path(tmp_path_factory.mktemp("static")), settings={"max_run_bytes": BUDGET}) as running:
        yield running


def _loop(count: int, chars: int) -> dict:
    return definition(
        [
            node("start", "start"),
            node("each", "loop", config={"items": list(range(count))}),
            node("big", config={"output": f"{{{{ 'x' * {chars} }}}}"}),
            end(params={"count": "{{ ctx.each.count }}"}),
        ],
        [edge("start", "each"), edge("each", "big", "loop"), edge("each", "end", "done")],
    )


async def _test_run(server: Server, account: Account, graph: dict) -> str:
    started = await account.client.post("/api/test-runs", json=graph)
    assert started.status_code == 202, started.text
    run_id = str(started.json()["instanceId"])
    await server.engine.wait_for_run(run_id, 30)
    return run_id


async def test_a_loop_of_large_items_fails_at_the_budget_and_the_run_reads_back_bounded(
    server: Server, alice: Account
) -> None:
    run_id = await _test_run(server, alice, _loop(30, ITEM_CHARS))

    response = await alice.client.get(f"/api/runs/{run_id}")
    assert response.status_code == 200
    run = response.json()
    assert run["status"] == "FAILED"
    assert "FLOWDECK_MAX_RUN_BYTES" in run["error"] and "node 'big'" in run["error"]
    big = run["nodes"]["big"]
    failed = [view for view in big["iterations"].values() if view["status"] == "FAILED"]
    assert len(failed) == 1 and "FLOWDECK_MAX_RUN_BYTES" in failed[0]["error"]
    stored = [view for view in big["iterations"].values() if view["status"] == "COMPLETED"]
    assert len(stored) == BUDGET // (2 * (ITEM_CHARS + 2))  # each item counts twice: its row and the loop's copy
    # The body stays small: every output there is too large to show, so each is its size and a link.
    assert len(response.content) < SHOWN_READ_BYTES + 64 * 1024
    for view in stored:
        assert view["output"] is None
        assert view["outputTruncated"]["bytes"] == ITEM_CHARS + 2
    events = await alice.client.get(f"/api/runs/{run_id}/events", params={"limit": 200})
    assert events.status_code == 200 and len(events.content) < SHOWN_READ_BYTES + 256 * 1024


async def test_a_truncated_output_links_to_its_full_output_for_its_tenant_only(
    server: Server, alice: Account, mallory: Account
) -> None:
    run_id = await _test_run(server, alice, _loop(2, SHOWN_OUTPUT_BYTES + 10))

    run = (await alice.client.get(f"/api/runs/{run_id}")).json()
    assert run["status"] == "COMPLETED", run["error"]
    second = run["nodes"]["big"]["iterations"]["1"]
    truncated = second["outputTruncated"]
    assert second["output"] is None and truncated["bytes"] == SHOWN_OUTPUT_BYTES + 12
    assert truncated["preview"].startswith('"xxxx') and len(truncated["preview"]) <= 512
    assert truncated["href"] == f"/api/runs/{run_id}/nodes/big/output?iteration=1"

    full = await alice.client.get(truncated["href"])
    assert full.status_code == 200 and full.headers["content-type"].startswith("application/json")
    assert full.json() == "x" * (SHOWN_OUTPUT_BYTES + 10)
    assert len(full.content) == truncated["bytes"]
    loop = await alice.client.get(f"/api/runs/{run_id}/nodes/each/output")
    assert loop.status_code == 200 and loop.json()["count"] == 2
    whole = await alice.client.get(f"/api/runs/{run_id}/output")
    assert whole.status_code == 200 and whole.json() == {"count": 2}

    assert (await mallory.client.get(truncated["href"])).status_code == 404
    assert (await mallory.client.get(f"/api/runs/{run_id}/output")).status_code == 404
    assert (await alice.client.get(f"/api/runs/{run_id}/nodes/nope/output")).status_code == 404
    missing = await alice.client.get(f"/api/runs/{run_id}/nodes/big/output", params={"iteration": "7"})
    assert missing.status_code == 404 and "iteration '7'" in missing.text
    bad = await alice.client.get(f"/api/runs/{run_id}/nodes/big/output", params={"iteration": "x;1"})
    assert bad.status_code == 400


async def test_small_outputs_are_shown_in_full(server: Server, alice: Account) -> None:
    run_id = await _test_run(server, alice, _loop(3, 10))
    run = (await alice.client.get(f"/api/runs/{run_id}")).json()
    assert run["status"] == "COMPLETED"
    assert run["nodes"]["big"]["iterations"]["0"]["output"] == "x" * 10
    assert "outputTruncated" not in run["nodes"]["big"]["iterations"]["0"]
    assert run["output"] == {"count": 3} and run.get("outputTruncated") is None


async def test_the_live_snapshot_and_node_updates_send_a_large_output_truncated(server: Server, alice: Account) -> None:
    watcher = Watcher()
    await watcher.sio.connect(server.url, auth={"token": alice.token}, transports=["websocket"])
    try:
        chars = SHOWN_OUTPUT_BYTES * 3
        graph = definition(
            [
                node("start", "start"),
                node("wait", config={"sleep": 0.5}),
                node("big", config={"output": f"{{{{ 'y' * {chars} }}}}"}),
                end(params={"v": "{{ ctx.big }}"}),
            ],
            [edge("start", "wait"), edge("wait", "big"), edge("big", "end")],
        )
        started = await alice.client.post("/api/test-runs", json=graph)
        run_id = started.json()["instanceId"]
        assert await watcher.join(run_id) == {"ok": True}
        async with asyncio.timeout(20):
            await watcher.finished.wait()
        updates = [data for name, data in watcher.of_run(run_id) if name == "workflow_node_update"]
        [big] = [u for u in updates if u["nodeID"] == "big" and u["status"] == "COMPLETED"]
        assert big["output"] is None and big["outputTruncated"]["bytes"] == chars + 2
        assert big["outputTruncated"]["href"] == f"/api/runs/{run_id}/nodes/big/output"
        [status] = [data for name, data in watcher.of_run(run_id) if name == "workflow_status_update"]
        assert status["output"] is None and status["outputTruncated"]["href"] == f"/api/runs/{run_id}/output"

        assert await watcher.join(run_id) == {"ok": True}  # joining again: a fresh snapshot of the finished run
        async with asyncio.timeout(10):
            while sum(name == "workflow_run_snapshot" for name, _ in watcher.of_run(run_id)) < 2:
                await asyncio.sleep(0.01)
        snapshot = [data for name, data in watcher.of_run(run_id) if name == "workflow_run_snapshot"][-1]
        assert snapshot["nodes"]["big"]["output"] is None
        assert snapshot["nodes"]["big"]["outputTruncated"]["bytes"] == chars + 2
        assert snapshot["nodes"]["wait"]["output"] == {"node": "wait", "attempt": 1}
    finally:
        await watcher.sio.disconnect()
