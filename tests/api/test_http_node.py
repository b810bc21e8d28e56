"""The ``http`` node over REST: refused literal URLs and foreign data sources are 400s naming the field; a test run
calls an allowed server (this one, on 127.0.0.1 listed in the tests' FLOWDECK_HTTP_ALLOW) and shows its answer."""

from __future__ import annotations

from typing import Any

import pytest

from tests.api.conftest import Account, Server
from tests.support.graphs import definition, edge, end, node

pytestmark = pytest.mark.asyncio(loop_scope="module")


def flow(config: dict[str, Any]) -> dict[str, Any]:
    return definition(
        [node("start", "start"), node("call", "http", config=config), end(params={"answer": "{{ ctx.call }}"})],
        [edge("start", "call"), edge("call", "end", "success")],
    )


def named(problems: list[dict[str, Any]], path: str) -> list[dict[str, Any]]:
    return [p for p in problems if p.get("nodeId") == "call" and p.get("path") == path]


async def test_a_refused_literal_url_is_refused_naming_config_url(alice: Account) -> None:
    graph = flow({"url": "http://169.254.169.254/latest/meta-data/"})
    checked = (await alice.client.post("/api/workflows/validate", json=graph)).json()
    assert checked["valid"] is False
    [problem] = named(checked["problems"], "config.url")
    assert "169.254.169.254 is a link-local address" in problem["message"]
    assert "FLOWDECK_HTTP_ALLOW" in problem["message"]
    for url in ("/api/workflows", "/api/test-runs"):
        response = await alice.client.post(url, json=graph)
        assert response.status_code == 400, url
        assert named(response.json()["extra"], "config.url")
    assert (await alice.client.get("/api/workflows")).json()["items"] == []
    unreadable = (await alice.client.post("/api/workflows/validate", json=flow({"url": "ftp://example.com/x"}))).json()
    assert "http:// or https://" in named(unreadable["problems"], "config.url")[0]["message"]


async def test_another_tenants_data_source_reads_as_missing(alice: Account, mallory: Account, server: Server) -> None:
    source = {"name": "private api", "kind": "http", "config": {"baseUrl": server.url}, "secrets": {"X-Key": "k"}}
    theirs = (await mallory.client.post("/api/data-sources", json=source)).json()["id"]
    answers = []
    for source_id in (theirs, "ds-never-made"):
        graph = flow({"url": "/api/health", "dataSourceId": source_id})
        checked = (await alice.client.post("/api/workflows/validate", json=graph)).json()
        [problem] = named(checked["problems"], "config.dataSourceId")
        answers.append(problem["message"].replace(source_id, "<id>"))
        assert (await alice.client.post("/api/test-runs", json=graph)).status_code == 400
    assert answers[0] == answers[1] and "private api" not in answers[0]


async def test_a_test_run_calls_an_allowed_server_and_shows_the_answer(alice: Account, server: Server) -> None:
    graph = flow({"url": server.url + "/api/health", "query": {"probe": "{{ ctx.input.n }}"}})
    started = await alice.client.post("/api/test-runs", json={**graph, "input": {"n": 1}})
    assert started.status_code == 202, started.text
    run_id = started.json()["instanceId"]
    await server.engine.wait_for_run(run_id, 10)
    run = (await alice.client.get(f"/api/runs/{run_id}")).json()
    assert run["status"] == "COMPLETED", run["error"]
    answer = run["nodes"]["call"]["output"]
    assert answer["status"] == 200 and answer["body"]["status"] == "ok"
    assert answer["headers"]["content-type"].startswith("application/json")
    assert run["output"]["answer"] == answer
