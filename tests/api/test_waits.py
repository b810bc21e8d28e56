"""``wait`` nodes over HTTP (docs/waits.md): a run parks WAITING until ``POST /resume/{token}`` or a form
submission resumes it, exactly once; tokens of ended runs are gone; a timeout takes the ``timeout`` handle."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any

import httpx
import pytest

from tests.api.conftest import Account, Server
from tests.api.test_socketio import Watcher
from tests.support.graphs import definition, edge, end, node
from tests.support.waiting import until

pytestmark = pytest.mark.asyncio(loop_scope="module")

FIELDS = [
    {"name": "who", "label": "Your <b>name</b>", "type": "string", "required": True},
    {"name": "amount", "label": "Amount", "type": "number", "required": True},
    {"name": "ok", "label": "Approve", "type": "boolean"},
    {"name": "size", "label": "Size", "type": "select", "options": ["S", "M"], "required": False},
]


def waiting(config: dict[str, Any], *, timeout_edge: bool = False, label: str = "Wait for it") -> dict[str, Any]:
    nodes = [
        node("start", "start"),
        node("hold", "wait", label=label, config=config),
        end(params={"got": "{{ ctx.hold }}", "url": "{{ ctx.run.resumeUrls.hold }}"}),
    ]
    edges = [edge("start", "hold"), edge("hold", "end", "success")]
    if timeout_edge:
        nodes.append(end("late", params={"late": "{{ ctx.hold.timedOut }}"}))
        edges.append(edge("hold", "late", "timeout"))
    return definition(nodes, edges, timeoutSeconds=600)


async def start(account: Account, graph: dict[str, Any]) -> str:
    created = await account.client.post("/api/workflows", json=graph)
    assert created.status_code == 201, created.text
    started = await account.client.post(f"/api/workflows/{created.json()['id']}/runs", json={"input": {}})
    assert started.status_code == 202, started.text
    return str(started.json()["instanceId"])


async def until_seen(
    account: Account, run_id: str, check: Callable[[dict[str, Any]], bool], seconds: float = 15
) -> dict[str, Any]:
    """Poll the run until ``check`` holds (the event that proves it), or fail after ``seconds``."""

    async def run() -> dict[str, Any]:
        return dict((await account.client.get(f"/api/runs/{run_id}")).json())

    return await until(run, check, timeout=seconds, what=f"run {run_id}")


def is_waiting(node_id: str = "hold") -> Callable[[dict[str, Any]], bool]:
    return lambda run: run["nodes"].get(node_id, {}).get("status") == "WAITING"


async def test_a_webhook_resumes_the_run_once(server: Server, alice: Account, anonymous: httpx.AsyncClient) -> None:
    run_id = await start(alice, waiting({"resumeOn": "webhook", "timeoutSeconds": 3600}))
    run = await until_seen(alice, run_id, is_waiting())
    shown = run["nodes"]["hold"]["waitingFor"]
    assert shown["resumeOn"] == "webhook" and shown["url"].startswith("/resume/")
    assert shown["until"] == pytest.approx(time.time() + 3600, abs=60)
    assert run["status"] == "RUNNING"

    resumed = await anonymous.post(shown["url"], json={"approved": True})
    assert resumed.status_code == 202, resumed.text
    assert resumed.json() == {"instanceId": run_id, "nodeId": "hold"}
    await server.engine.wait_for_run(run_id, 15)
    run = (await alice.client.get(f"/api/runs/{run_id}")).json()
    assert run["status"] == "COMPLETED", run["error"]
    assert run["output"]["got"]["body"] == {"approved": True}
    assert run["output"]["got"]["receivedAt"] == pytest.approx(time.time(), abs=60)
    assert run["output"]["url"] == shown["url"]  # ctx.run.resumeUrls knew it from the start
    assert "waitingFor" not in run["nodes"]["hold"]

    again = await anonymous.post(shown["url"], json={})
    assert again.status_code == 409
    assert (await anonymous.post("/resume/" + "x" * 43, json={})).status_code == 404


async def test_cancelling_the_run_revokes_its_token(alice: Account, anonymous: httpx.AsyncClient) -> None:
    run_id = await start(alice, waiting({"resumeOn": "webhook"}))
    run = await until_seen(alice, run_id, is_waiting())
    url = run["nodes"]["hold"]["waitingFor"]["url"]
    assert (await alice.client.post(f"/api/runs/{run_id}/cancel")).status_code in (200, 202)
    assert (await anonymous.post(url, json={})).status_code == 404
    run = (await alice.client.get(f"/api/runs/{run_id}")).json()
    assert run["status"] == "CANCELLED" and run["nodes"]["hold"]["status"] == "CANCELLED"


async def test_two_concurrent_resumes_one_wins(server: Server, alice: Account, anonymous: httpx.AsyncClient) -> None:
    run_id = await start(alice, waiting({"resumeOn": "webhook"}))
    url = (await until_seen(alice, run_id, is_waiting()))["nodes"]["hold"]["waitingFor"]["url"]
    answers = await asyncio.gather(*(anonymous.post(url, json={"n": n}) for n in range(6)))
    assert sorted(a.status_code for a in answers) == [202] + [409] * 5
    winner = next(n for n, a in enumerate(answers) if a.status_code == 202)
    await server.engine.wait_for_run(run_id, 15)
    run = (await alice.client.get(f"/api/runs/{run_id}")).json()
    assert run["output"]["got"]["body"] == {"n": winner}


async def test_the_timeout_takes_the_timeout_handle(server: Server, alice: Account) -> None:
    run_id = await start(alice, waiting({"resumeOn": "webhook", "timeoutSeconds": 0.5}, timeout_edge=True))
    await server.engine.wait_for_run(run_id, 15)
    run = (await alice.client.get(f"/api/runs/{run_id}")).json()
    assert run["status"] == "COMPLETED", run["error"]
    assert run["output"] == {"late": True}
    assert run["nodes"]["end"]["status"] == "SKIPPED"


async def test_a_timeout_nothing_takes_fails_the_node(server: Server, alice: Account) -> None:
    run_id = await start(alice, waiting({"resumeOn": "webhook", "timeoutSeconds": 0.3}))
    await server.engine.wait_for_run(run_id, 15)
    run = (await alice.client.get(f"/api/runs/{run_id}")).json()
    assert run["status"] == "FAILED"
    assert "was not resumed" in run["nodes"]["hold"]["error"]


async def test_bad_configs_are_refused_naming_the_field(alice: Account) -> None:
    for config, key, words in [
        ({"resumeOn": "approve"}, "config.resumeOn", "approval"),
        ({"resumeOn": "email"}, "config.resumeOn", "webhook"),
        ({"resumeOn": "webhook", "timeoutSeconds": 10**9}, "config.timeoutSeconds", "FLOWDECK_MAX_WAIT_SECONDS"),
        ({"resumeOn": "form", "fields": [{"name": "a", "type": "date"}]}, "config.fields[0].type", "one of"),
        ({"resumeOn": "form", "fields": [{"name": "a", "type": "select"}]}, "config.fields[0].options", "options"),
    ]:
        refused = await alice.client.post("/api/workflows", json=waiting(config))
        assert refused.status_code == 400, refused.text
        problems = refused.json()["extra"]
        assert any(p["path"] == key and words in p["message"] for p in problems), problems


async def test_a_form_page_and_its_submissions(server: Server, alice: Account, anonymous: httpx.AsyncClient) -> None:
    run_id = await start(alice, waiting({"resumeOn": "form", "fields": FIELDS}, label="Pay <script>"))
    url = (await until_seen(alice, run_id, is_waiting()))["nodes"]["hold"]["waitingFor"]["url"]
    assert url.startswith("/forms/")

    page = await anonymous.get(url)
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    assert f"<title>{alice.tenant} · Pay &lt;script&gt;</title>" in page.text and "<script>" not in page.text
    assert "Your &lt;b&gt;name&lt;/b&gt;" in page.text
    assert "frame-ancestors 'none'" in page.headers["content-security-policy"]
    assert page.headers["referrer-policy"] == "no-referrer"

    for body, field in [
        ({"amount": 3}, "who"),
        ({"who": "Ada", "amount": "three"}, "amount"),
        ({"who": "Ada", "amount": 3, "ok": "yes"}, "ok"),
        ({"who": "Ada", "amount": 3, "size": "XL"}, "size"),
        ({"who": "Ada", "amount": 3, "color": "red"}, "color"),
    ]:
        bad = await anonymous.post(url, json=body)
        assert bad.status_code == 400, bad.text
        assert bad.json()["extra"] == [{"key": f"fields.{field}"}] and field in bad.json()["detail"]
    bad = await anonymous.post(url, content="who=Ada&amount=x", headers={"content-type": FORM})
    assert bad.status_code == 400 and "amount" in bad.json()["detail"]

    sent = await anonymous.post(url, content="who=Ada&amount=2.5&ok=true&size=M", headers={"content-type": FORM})
    assert sent.status_code == 202 and "Thank you" in sent.text
    await server.engine.wait_for_run(run_id, 15)
    run = (await alice.client.get(f"/api/runs/{run_id}")).json()
    assert run["output"]["got"] == {"who": "Ada", "amount": 2.5, "ok": True, "size": "M"}
    assert (await anonymous.post(url, json={"who": "Bob", "amount": 1})).status_code == 409
    assert (await anonymous.get(url)).status_code == 409


async def test_a_form_takes_json(server: Server, alice: Account, anonymous: httpx.AsyncClient) -> None:
    run_id = await start(alice, waiting({"resumeOn": "form", "fields": FIELDS}))
    url = (await until_seen(alice, run_id, is_waiting()))["nodes"]["hold"]["waitingFor"]["url"]
    sent = await anonymous.post(url, json={"who": "Ada", "amount": 7})
    assert sent.status_code == 202 and sent.json() == {"instanceId": run_id, "nodeId": "hold"}
    await server.engine.wait_for_run(run_id, 15)
    run = (await alice.client.get(f"/api/runs/{run_id}")).json()
    assert run["output"]["got"] == {"who": "Ada", "amount": 7, "ok": False, "size": None}


FORM = "application/x-www-form-urlencoded"


async def test_a_test_run_waits_and_its_deletion_drops_the_token(
    server: Server, alice: Account, anonymous: httpx.AsyncClient
) -> None:
    graph = waiting({"resumeOn": "webhook"})
    first = await alice.client.post("/api/test-runs", json=graph)
    assert first.status_code == 202, first.text
    run_id = first.json()["instanceId"]
    url = (await until_seen(alice, run_id, is_waiting()))["nodes"]["hold"]["waitingFor"]["url"]
    assert (await anonymous.post(url, json={"from": "editor"})).status_code == 202
    await server.engine.wait_for_run(run_id, 15)
    run = (await alice.client.get(f"/api/runs/{run_id}")).json()
    assert run["output"]["got"]["body"] == {"from": "editor"}

    second = (await alice.client.post("/api/test-runs", json=graph)).json()["instanceId"]
    url = (await until_seen(alice, second, is_waiting()))["nodes"]["hold"]["waitingFor"]["url"]
    assert (await alice.client.delete(f"/api/test-runs/{second}")).status_code == 204
    assert (await anonymous.post(url, json={})).status_code == 404


async def test_the_live_view_shows_waiting_then_the_resume(
    server: Server, alice: Account, anonymous: httpx.AsyncClient
) -> None:
    watcher = Watcher()
    await watcher.sio.connect(server.url, auth={"token": alice.token}, transports=["websocket"])
    try:
        run_id = await start(alice, waiting({"resumeOn": "webhook"}))
        await until_seen(alice, run_id, is_waiting())
        assert await watcher.join(run_id) == {"ok": True}
        snapshot = watcher.of_run(run_id)[0]
        assert snapshot[0] == "workflow_run_snapshot"
        hold = snapshot[1]["nodes"]["hold"]
        assert hold["status"] == "WAITING" and hold["waitingFor"]["url"].startswith("/resume/")
        assert (await anonymous.post(hold["waitingFor"]["url"], json={"ok": 1})).status_code == 202
        await asyncio.wait_for(watcher.finished.wait(), 15)
        updates = [d for name, d in watcher.of_run(run_id) if name == "workflow_node_update" and d["nodeID"] == "hold"]
        assert updates[-1]["status"] == "COMPLETED" and updates[-1]["output"] == {
            "body": {"ok": 1},
            "receivedAt": pytest.approx(time.time(), abs=60),
        }
    finally:
        await watcher.sio.disconnect()


async def test_the_waiting_update_is_announced_live(server: Server, alice: Account) -> None:
    graph = definition(
        [
            node("start", "start"),
            node("slow", config={"sleep": 0.5}),
            node("hold", "wait", config={"resumeOn": "form"}),
            end(),
        ],
        [edge("start", "slow"), edge("slow", "hold"), edge("hold", "end", "success")],
    )
    watcher = Watcher()
    await watcher.sio.connect(server.url, auth={"token": alice.token}, transports=["websocket"])
    try:
        created = await alice.client.post("/api/test-runs", json=graph)
        assert created.status_code == 202, created.text
        run_id = created.json()["instanceId"]
        assert await watcher.join(run_id) == {"ok": True}  # before the wait is reached: slow sleeps 0.5 s
        seen = await until(
            lambda: [d for _, d in watcher.of_run(run_id) if d.get("nodeID") == "hold" and d["status"] == "WAITING"],
            what="the WAITING update of hold",
        )
        assert (
            seen[0]["status"] == "WAITING"
            and seen[0]["waitingFor"]["resumeOn"] == "form"
            and seen[0]["waitingFor"]["url"].startswith("/forms/")
        )
        await alice.client.post(f"/api/runs/{run_id}/cancel")
    finally:
        await watcher.sio.disconnect()


async def test_ctx_run_is_a_known_variable_in_a_workflow_with_waits(alice: Account) -> None:
    checked = await alice.client.post("/api/workflows/validate", json=waiting({"resumeOn": "webhook"}))
    assert checked.status_code == 200
    assert [p for p in checked.json()["problems"] if p["code"] == "unknown_variable"] == []
