"""Run and time budgets over HTTP (issue 21): the run-tree bomb stops by itself at FLOWDECK_MAX_TREE_RUNS;
timeouts above their maxima are a 400 naming the field on create, validate and test run; past
FLOWDECK_TENANT_ACTIVE_RUNS a start answers 429 with Retry-After, from the REST API, a test run and a
webhook alike, and another tenant is not held back."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from typing import Any

import pytest
import pytest_asyncio
from pytest import TempPathFactory

from flowdeck.storage.database import Database
from flowdeck.validation.limits import MAX_NODE_TIMEOUT_SECONDS, MAX_RUN_TIMEOUT_SECONDS
from tests.api.conftest import Account, Server, serve
from tests.support.graphs import definition, edge, end, node

pytestmark = pytest.mark.asyncio(loop_scope="module")

ACTIVE_RUNS = 40
TREE_RUNS = 30


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def server(api_db: Database, tmp_path_factory: TempPathFactory) -> AsyncIterator[Server]:
    """This module's app: a tenant may have 40 active runs, a tree of calls 30 runs."""
    settings = {"tenant_active_runs": ACTIVE_RUNS, "max_tree_runs": TREE_RUNS}
    async with serve(api_db, tmp_path_factory.mktemp("static"), settings=settings) as app:
        yield app


def trivial(**options: Any) -> dict[str, Any]:
    return definition([node("start", "start"), node("s"), end()], [edge("start", "s"), edge("s", "end")], **options)


def waits() -> dict[str, Any]:
    """A run that stays RUNNING behind a 60-second delay until cancelled."""
    return definition(
        [node("start", "start"), node("wait", "delay", config={"seconds": 60}), end()],
        [edge("start", "wait"), edge("wait", "end")],
    )


def bomb(self_id: str) -> dict[str, Any]:
    """The finding: a workflow that calls itself from a loop of 10, concurrency 10, timeoutSeconds 3000."""
    return definition(
        [
            node("start", "start"),
            node("each", "loop", config={"items": list(range(10)), "concurrency": 10}),
            node("again", "workflow", config={"workflowId": self_id, "input": {}}, timeoutSeconds=3000),
            end(),
        ],
        [edge("start", "each"), edge("each", "again", "loop"), edge("each", "end", "done")],
        timeoutSeconds=3000,
    )


async def test_the_run_tree_bomb_stops_by_itself_at_the_cap(alice: Account, mallory: Account) -> None:
    workflow_id = (await alice.client.post("/api/workflows", json=trivial())).json()["id"]
    saved = await alice.client.put(f"/api/workflows/{workflow_id}", json=bomb(workflow_id) | {"version": 1})
    assert saved.status_code == 200, saved.text  # accepted: 3000 s is within the maxima
    started = await alice.client.post(f"/api/workflows/{workflow_id}/runs", json={})
    assert started.status_code == 202, started.text
    root_id = started.json()["instanceId"]

    deadline = time.monotonic() + 90
    while True:
        page = (await alice.client.get("/api/runs", params={"limit": 100})).json()
        tree = [run for run in page["items"] if run["workflowId"] == workflow_id]
        if tree and all(run["status"] not in ("RUNNING", "PENDING") for run in tree):
            break
        assert time.monotonic() < deadline, "the tree never stopped"
        await asyncio.sleep(0.2)
    assert len(tree) == TREE_RUNS  # one API call started exactly the cap, and it stopped by itself
    root = (await alice.client.get(f"/api/runs/{root_id}")).json()
    assert root["status"] == "FAILED"

    refused = []
    for run in tree:
        detail = (await alice.client.get(f"/api/runs/{run['instanceId']}")).json()
        iterations = (detail["nodes"].get("again") or {}).get("iterations") or {}
        refused += [view["error"] for view in iterations.values() if "may be in one tree" in (view["error"] or "")]
    assert refused and all("FLOWDECK_MAX_TREE_RUNS" in message for message in refused), refused

    # The other tenant was never held back.
    neighbour = await mallory.client.post("/api/test-runs", json=trivial())
    assert neighbour.status_code == 202, neighbour.text


def _paths(answer: Any) -> set[str]:
    return {problem["path"] for problem in answer["extra"]}


@pytest.mark.parametrize(
    ("where", "field"),
    [("run", "options.timeoutSeconds"), ("node", "timeoutSeconds"), ("workflow node", "timeoutSeconds")],
)
async def test_timeouts_above_their_maxima_are_refused_everywhere(alice: Account, where: str, field: str) -> None:
    if where == "run":
        too_long = trivial(timeoutSeconds=MAX_RUN_TIMEOUT_SECONDS + 1)
        fine = trivial(timeoutSeconds=MAX_RUN_TIMEOUT_SECONDS)
    else:
        bounded = where == "node"
        most = MAX_NODE_TIMEOUT_SECONDS if bounded else MAX_RUN_TIMEOUT_SECONDS
        fine = trivial(timeoutSeconds=MAX_RUN_TIMEOUT_SECONDS)
        target = fine["nodes"][1]
        if not bounded:  # a workflow node waits parked: it may wait as long as a run
            child = (await alice.client.post("/api/workflows", json=trivial())).json()["id"]
            target.update(type="workflow", config={"workflowId": child})
            fine["edges"][1]["sourceHandle"] = "success"
        target["timeoutSeconds"] = most
        too_long = {**fine, "nodes": [fine["nodes"][0], {**target, "timeoutSeconds": most + 1}, fine["nodes"][2]]}

    created = await alice.client.post("/api/workflows", json=too_long)
    assert created.status_code == 400, created.text
    assert field in _paths(created.json())
    assert any("at most" in p["message"] and field in p["message"] for p in created.json()["extra"])
    validated = (await alice.client.post("/api/workflows/validate", json=too_long)).json()
    assert validated["valid"] is False and field in {p["path"] for p in validated["problems"]}
    tested = await alice.client.post("/api/test-runs", json=too_long)
    assert tested.status_code == 400 and field in _paths(tested.json())

    saved = await alice.client.post("/api/workflows", json=fine)
    assert saved.status_code == 201, saved.text


async def _start(alice: Account, workflow_id: str) -> Any:
    return await alice.client.post(f"/api/workflows/{workflow_id}/runs", json={"input": {}})


def _refused(answer: Any) -> None:
    assert answer.status_code == 429, answer.text
    assert int(answer.headers["Retry-After"]) >= 1
    assert "FLOWDECK_TENANT_ACTIVE_RUNS" in answer.json()["detail"]


async def test_starts_past_the_active_runs_cap_answer_429(server: Server, alice: Account, mallory: Account) -> None:
    waiting = (await alice.client.post("/api/workflows", json=waits())).json()["id"]
    active = []
    for _ in range(ACTIVE_RUNS):
        started = await _start(alice, waiting)
        assert started.status_code == 202, started.text
        active.append(started.json()["instanceId"])

    _refused(await _start(alice, waiting))
    _refused(await alice.client.post("/api/test-runs", json=trivial()))
    secret = (await alice.client.post(f"/api/workflows/{waiting}/webhook/secret")).json()["secret"]
    async with server.client() as anonymous:
        _refused(await anonymous.post(f"/hooks/{waiting}", json={}, headers={"X-Flowdeck-Secret": secret}))

    neighbour = (await mallory.client.post("/api/workflows", json=trivial())).json()["id"]
    assert (await _start(mallory, neighbour)).status_code == 202  # another tenant is not held back

    cancelled = await alice.client.post(f"/api/runs/{active[0]}/cancel")
    assert cancelled.status_code == 200, cancelled.text
    assert (await _start(alice, waiting)).status_code == 202  # room again
