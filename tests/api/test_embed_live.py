"""An embed link is public: whoever holds it reads the widget's processed data and nothing else (issue 11 §4).

Written as the holder of a leaked link (or a user of another tenant) would try it: over Socket.IO, over
``/embed/{token}/runs/{id}``, and by starting sync runs as fast as they can.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
import pytest_asyncio
import socketio

from tests.api.conftest import Account, Server
from tests.api.test_widgets import echo, embed_token, run, slow_echo, widget, workflow
from tests.support.graphs import definition, edge, end, node

pytestmark = pytest.mark.asyncio(loop_scope="module")

SECRET = "s3cret-input-value"
ANSWER_KEYS = {"widgetId", "type", "mode", "status", "runId", "runStatus", "runCompletedAt", "data", "error"}


class EmbedClient:
    """A python-socketio client with an embed token that records every event it hears, in order."""

    def __init__(self) -> None:
        self.sio = socketio.AsyncClient(reconnection=False)
        self.heard: asyncio.Queue[tuple[str, Any]] = asyncio.Queue()
        self.everything: list[tuple[str, Any]] = []
        self.sio.on("*", self._record)

    async def _record(self, event: str, data: Any = None) -> None:
        self.everything.append((event, data))
        await self.heard.put((event, data))

    async def next(self) -> tuple[str, Any]:
        return await asyncio.wait_for(self.heard.get(), 10)

    async def call(self, event: str, data: dict[str, Any]) -> dict[str, Any]:
        answer: dict[str, Any] = await self.sio.call(event, data, timeout=5)
        return answer


@pytest_asyncio.fixture(loop_scope="module")
async def connect(server: Server) -> AsyncIterator[Any]:
    clients: list[EmbedClient] = []

    async def open_client(token: str) -> EmbedClient:
        client = EmbedClient()
        await client.sio.connect(server.url, auth={"embedToken": token}, transports=["websocket"])
        clients.append(client)
        return client

    yield open_client
    for client in clients:
        await client.sio.disconnect()


def region_sync() -> dict[str, Any]:
    """A sync json widget of ``slow_echo`` showing the ``region`` it was asked for, waiting 0.1 s for the run."""
    return {
        "path": "report.region",
        "waitSeconds": 0.1,
        "inputs": [
            {"param": "region", "field": "region", "required": True},
            {"param": "sleep", "field": "sleep", "type": "number", "default": 0},
        ],
    }


def shown_only() -> dict[str, Any]:
    """A json widget showing ``report.shown`` of ``{"report": <run input>}``: the input's other keys stay hidden."""
    return {"path": "report.shown"}


async def test_an_embed_connection_hears_only_the_widgets_data_and_joins_no_run(
    server: Server, alice: Account, anonymous: httpx.AsyncClient, connect: Any
) -> None:
    mine, other = await workflow(alice), await workflow(alice)
    widget_id = await widget(alice, mine, "json", shown_only())
    token = (await embed_token(alice, widget_id))["token"]
    other_token = (await embed_token(alice, await widget(alice, other, "json", {})))["token"]
    earlier = await run(server, alice, mine, {"shown": 0, "secret": SECRET})
    client = await connect(token)
    assert await client.call("widget_join", {"token": token}) == {"ok": True}
    assert await client.call("widget_join", {"token": other_token}) == {"ok": False, "error": "widget not found"}

    # Nothing of a run can be joined, not even a production run of the widget's own workflow.
    refused = await client.call("workflow_run_join", {"runId": earlier})
    assert refused["ok"] is False and "widget" in refused["error"]

    test_run = (await alice.client.post("/api/test-runs", json={**echo(), "input": {"shown": "test"}})).json()
    await server.engine.wait_for_run(test_run["instanceId"], 10)
    await run(server, alice, other, {"shown": "other workflow"})
    latest = await run(server, alice, mine, {"shown": 42, "secret": SECRET})

    event, pushed = await client.next()  # the first event heard: neither the test run nor the other workflow
    assert event == "widget_data" and set(pushed) == ANSWER_KEYS
    assert pushed["runId"] == latest and pushed["data"] == {"value": 42, "expandDepth": 2}
    assert pushed == (await anonymous.get(f"/embed/{token}/data")).json()  # exactly what the data endpoint answers
    assert SECRET not in json.dumps(client.everything)
    assert not any(name.startswith("workflow_") for name, _ in client.everything)


async def test_a_sync_page_follows_its_own_run_and_hears_only_its_data(
    server: Server, alice: Account, mallory: Account, anonymous: httpx.AsyncClient, connect: Any
) -> None:
    workflow_id = await workflow(alice, slow_echo())
    config = region_sync()
    widget_id = await widget(alice, workflow_id, "json", config, mode="sync")
    token = (await embed_token(alice, widget_id))["token"]
    client = await connect(token)
    assert await client.call("widget_join", {"token": token}) == {"ok": True}

    answer = (await anonymous.get(f"/embed/{token}/data", params={"region": "eu", "sleep": "0.5"})).json()
    assert answer["status"] == "running"
    assert await client.call("widget_follow", {"runId": answer["runId"]}) == {"ok": True}
    event, pushed = await client.next()
    assert event == "widget_data" and set(pushed) == ANSWER_KEYS
    assert pushed["runId"] == answer["runId"] and pushed["status"] == "ready" and pushed["data"]["value"] == "eu"

    # A run that already finished is answered at once; runs that are not the widget's are unknown.
    assert await client.call("widget_follow", {"runId": answer["runId"]}) == {"ok": True}
    event, again = await client.next()
    assert event == "widget_data" and again == pushed
    elsewhere = await run(server, alice, await workflow(alice), {"region": "x"})
    mallorys_workflow = await workflow(mallory, slow_echo())
    mallorys = await mallory.client.post(f"/api/workflows/{mallorys_workflow}/runs", json={"input": {"sleep": 0}})
    test_run = (await alice.client.post("/api/test-runs", json={**slow_echo(), "input": {"sleep": 0}})).json()
    for hidden in (elsewhere, mallorys.json()["instanceId"], test_run["instanceId"], "no-such-run"):
        assert await client.call("widget_follow", {"runId": hidden}) == {"ok": False, "error": "run not found"}
    assert all(name == "widget_data" for name, _ in client.everything)


async def test_a_signed_in_connection_cannot_follow_a_widget_run(server: Server, alice: Account) -> None:
    client = socketio.AsyncClient(reconnection=False)
    await client.connect(server.url, auth={"token": alice.token}, transports=["websocket"])
    try:
        answer = await client.call("widget_follow", {"runId": "any-run"}, timeout=5)
        assert answer == {"ok": False, "error": "not connected"}
    finally:
        await client.disconnect()


async def test_a_run_read_through_an_embed_link_is_the_widgets_data_only(
    server: Server, alice: Account, anonymous: httpx.AsyncClient
) -> None:
    workflow_id = await workflow(alice)
    token = (await embed_token(alice, await widget(alice, workflow_id, "json", shown_only())))["token"]
    run_id = await run(server, alice, workflow_id, {"shown": [1, 2], "secret": SECRET})
    answer = await anonymous.get(f"/embed/{token}/runs/{run_id}")
    assert answer.status_code == 200 and set(answer.json()) == ANSWER_KEYS
    assert answer.json()["data"]["value"] == [1, 2] and SECRET not in answer.text


def sync_echo(runs_per_minute: int | None) -> dict[str, Any]:
    config: dict[str, Any] = {"path": "report", "waitSeconds": 5}
    if runs_per_minute is not None:
        config["runsPerMinute"] = runs_per_minute
    return config


async def test_a_public_sync_link_starts_at_most_its_runs_per_minute_even_in_parallel(
    server: Server, alice: Account, anonymous: httpx.AsyncClient
) -> None:
    workflow_id = await workflow(alice)
    widget_id = await widget(alice, workflow_id, "json", sync_echo(3), mode="sync")
    token = (await embed_token(alice, widget_id))["token"]

    answers = await asyncio.gather(*(anonymous.get(f"/embed/{token}/data") for _ in range(8)))
    assert sorted(a.status_code for a in answers) == [200] * 3 + [429] * 5
    refused = next(a for a in answers if a.status_code == 429)
    assert 1 <= int(refused.headers["retry-after"]) <= 60 and "runsPerMinute" in refused.json()["detail"]
    runs = (await alice.client.get("/api/runs", params={"workflowId": workflow_id})).json()["items"]
    assert len(runs) == 3

    # The budget is the link's: another link of the widget has its own, and the signed-in API has none.
    fresh = (await embed_token(alice, widget_id))["token"]
    assert (await anonymous.get(f"/embed/{fresh}/data")).status_code == 200
    assert (await alice.client.get(f"/api/widgets/{widget_id}/data")).status_code == 200


async def test_the_default_budget_is_ten_runs_a_minute(server: Server, alice: Account) -> None:
    workflow_id = await workflow(alice)
    token = (await embed_token(alice, await widget(alice, workflow_id, "json", sync_echo(None), mode="sync")))["token"]
    async with server.client() as public:
        codes = [(await public.get(f"/embed/{token}/data")).status_code for _ in range(11)]
    assert codes == [200] * 10 + [429]


@pytest.mark.parametrize(
    ("mode", "value", "message"),
    [("sync", 0, "expected `int` >= 1"), ("sync", "many", "expected `int`"), ("replay", 5, "only a sync widget")],
)
async def test_runs_per_minute_is_checked_and_named(alice: Account, mode: str, value: Any, message: str) -> None:
    workflow_id = await workflow(alice)
    config = {"path": "report", "runsPerMinute": value}
    body = {"workflowId": workflow_id, "name": "w", "type": "json", "mode": mode, "config": config}
    refused = await alice.client.post("/api/widgets", json=body)
    assert refused.status_code == 400, refused.text
    assert "config.runsPerMinute" in refused.text and message in refused.text


async def test_a_failed_runs_error_text_stays_with_the_tenant(
    server: Server, alice: Account, anonymous: httpx.AsyncClient
) -> None:
    broken = node("broken", config={"failTimes": 5}, retry={"maxAttempts": 1}, errorHandling="fail_workflow")
    graph = definition([node("start", "start"), broken, end()], [edge("start", "broken"), edge("broken", "end")])
    widget_id = await widget(alice, await workflow(alice, graph), "json", {"waitSeconds": 5}, mode="sync")
    token = (await embed_token(alice, widget_id))["token"]

    public = (await anonymous.get(f"/embed/{token}/data")).json()
    assert public["status"] == "error" and public["error"]["message"] == "the run FAILED"
    again = (await anonymous.get(f"/embed/{token}/runs/{public['runId']}")).json()
    assert again["error"]["message"] == "the run FAILED"
    signed_in = (await alice.client.get(f"/api/widgets/{widget_id}/data")).json()
    assert "planned failure" in signed_in["error"]["message"]  # the tenant's own view keeps the detail


async def test_after_a_gap_in_the_live_updates_widgets_are_sent_what_they_show_now(
    server: Server, alice: Account, anonymous: httpx.AsyncClient, connect: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Finished runs whose updates were lost between processes (the fan-out's connection dropped) are not
    waited for in vain: after the gap, a replay widget's room hears its data again, and a sync page hears
    the run it follows that finished meanwhile."""
    replay_workflow, sync_workflow = await workflow(alice), await workflow(alice, slow_echo())
    replay_token = (await embed_token(alice, await widget(alice, replay_workflow, "json", shown_only())))["token"]
    config = region_sync()
    sync_token = (await embed_token(alice, await widget(alice, sync_workflow, "json", config, mode="sync")))["token"]
    replay, sync = await connect(replay_token), await connect(sync_token)
    assert await replay.call("widget_join", {"token": replay_token}) == {"ok": True}
    assert await sync.call("widget_join", {"token": sync_token}) == {"ok": True}
    waiting = (await anonymous.get(f"/embed/{sync_token}/data", params={"region": "eu", "sleep": "0.3"})).json()
    assert waiting["status"] == "running"
    assert await sync.call("widget_follow", {"runId": waiting["runId"]}) == {"ok": True}

    rooms = server.app.realtime.widget_rooms
    assert rooms is not None

    async def lost(updates: Any) -> None:  # finished runs never heard, as if lost between processes
        pass

    monkeypatch.setattr(rooms, "_announce", lost)
    latest = await run(server, alice, replay_workflow, {"shown": 7, "secret": SECRET})
    await server.engine.wait_for_run(waiting["runId"], 10)

    server.engine.publisher.missed()
    event, pushed = await replay.next()
    assert event == "widget_data" and pushed["runId"] == latest and pushed["data"]["value"] == 7
    event, pushed = await sync.next()
    assert event == "widget_data" and pushed["runId"] == waiting["runId"]
    assert pushed["status"] == "ready" and pushed["data"]["value"] == "eu"
    assert SECRET not in json.dumps(replay.everything)
