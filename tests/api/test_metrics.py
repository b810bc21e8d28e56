"""``GET /metrics`` as an operator's Prometheus scrapes it: runs, node durations, retries, the queue; no tenant data."""

from __future__ import annotations

import re
from pathlib import Path

import httpx
import pytest

from flowdeck.storage.database import Database
from tests.api.conftest import Account, Server, serve
from tests.support.graphs import definition, edge, end, linear, node

pytestmark = pytest.mark.asyncio(loop_scope="module")


def sample(text: str, name: str, **labels: str) -> float:
    """The value of one sample of the exposition text (0 when the series does not exist yet)."""
    wanted = ",".join(f'{key}="{value}"' for key, value in sorted(labels.items()))
    for line in text.splitlines():
        match = re.fullmatch(r"([a-z_]+)(?:\{(.*)\})? (\S+)", line)
        if match and match[1] == name and ",".join(sorted((match[2] or "").split(","))) == wanted:
            return float(match[3])
    return 0.0


async def scrape(client: httpx.AsyncClient) -> str:
    response = await client.get("/metrics")
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("text/plain")
    return response.text


async def test_runs_and_nodes_are_counted_without_naming_tenants_workflows_or_runs(
    server: Server, alice: Account, anonymous: httpx.AsyncClient
) -> None:
    before = await scrape(anonymous)
    created = await alice.client.post("/api/workflows", json=linear(2))
    workflow_id = created.json()["id"]
    run_id = (await alice.client.post(f"/api/workflows/{workflow_id}/runs", json={"input": {}})).json()["instanceId"]
    await server.engine.wait_for_run(run_id, 10)
    after = await scrape(anonymous)

    started = "flowdeck_runs_started_total"
    assert sample(after, started, trigger="api") == sample(before, started, trigger="api") + 1
    finished = "flowdeck_runs_finished_total"
    assert sample(after, finished, status="COMPLETED") == sample(before, finished, status="COMPLETED") + 1
    steps = "flowdeck_node_duration_seconds_count"
    assert sample(after, steps, node_type="step", outcome="completed") == (
        sample(before, steps, node_type="step", outcome="completed") + 2
    )
    assert sample(after, "flowdeck_queue_due_jobs") == 0
    for private in (run_id, workflow_id, alice.tenant, alice.email):
        assert private not in after


async def test_a_retried_node_counts_as_a_retry(server: Server, alice: Account, anonymous: httpx.AsyncClient) -> None:
    flaky = node("flaky", retry={"maxAttempts": 3, "backoffSeconds": 0.01}, config={"failTimes": 2})
    graph = definition(
        [node("start", "start"), flaky, end()], [edge("start", "flaky"), edge("flaky", "end", "success")]
    )
    before = sample(await scrape(anonymous), "flowdeck_node_retries_total")
    run_id = (await alice.client.post("/api/test-runs", json={**graph, "input": {}})).json()["instanceId"]
    run = await server.engine.wait_for_run(run_id, 10)
    assert run.status == "COMPLETED"
    after = await scrape(anonymous)
    assert sample(after, "flowdeck_node_retries_total") == before + 2
    assert sample(after, "flowdeck_node_duration_seconds_count", node_type="step", outcome="failed") >= 2


async def test_metrics_can_be_turned_off(api_db: Database, tmp_path: Path) -> None:
    async with serve(api_db, tmp_path, settings={"metrics": False}) as off, off.client() as client:
        response = await client.get("/metrics")
    assert response.status_code == 404
    assert "FLOWDECK_METRICS=off" in response.json()["detail"]
