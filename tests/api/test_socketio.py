"""Socket.IO (SPEC §9): a real python-socketio client against uvicorn on 127.0.0.1."""

from __future__ import annotations

import asyncio
import itertools
import json
from collections.abc import AsyncIterator
from typing import Any

import pytest
import pytest_asyncio
import socketio
import websockets

from flowdeck.domain.statuses import node_progress
from tests.api.conftest import Account, Server
from tests.support.graphs import definition, edge, end, node

pytestmark = pytest.mark.asyncio(loop_scope="module")


class Watcher:
    """A connected client that records every event it receives, in order."""

    def __init__(self) -> None:
        self.sio = socketio.AsyncClient(reconnection=False)
        self.events: list[tuple[str, dict[str, Any]]] = []
        self.finished = asyncio.Event()
        for name in ("workflow_run_snapshot", "workflow_node_update", "workflow_status_update"):
            self.sio.on(name, self._recorder(name))

    def _recorder(self, name: str) -> Any:
        async def record(data: dict[str, Any]) -> None:
            self.events.append((name, data))
            if name == "workflow_status_update" and data["status"] in ("COMPLETED", "FAILED", "CANCELLED"):
                self.finished.set()

        return record

    async def join(self, run_id: str) -> dict[str, Any]:
        ack: dict[str, Any] = await self.sio.call("workflow_run_join", {"runId": run_id}, timeout=5)
        return ack

    def of_run(self, run_id: str) -> list[tuple[str, dict[str, Any]]]:
        return [(name, data) for name, data in self.events if data.get("instanceID") == run_id]

    async def caught_up(self, account: Account) -> None:
        """Wait until the relay has sent this connection everything published before now.

        The relay sends what the engine publishes in publishing order: a run started now and joined
        before it ends is announced finished after everything published before it. Only then can a
        test say that something was not sent.
        """
        started = await account.client.post("/api/test-runs", json=slow_chain())
        marker = started.json()["instanceId"]
        assert await self.join(marker) == {"ok": True}
        async with asyncio.timeout(10):
            while not any(name == "workflow_status_update" for name, _ in self.of_run(marker)):
                await asyncio.sleep(0.01)


@pytest_asyncio.fixture(loop_scope="module")
async def watcher(server: Server, alice: Account) -> AsyncIterator[Watcher]:
    client = Watcher()
    await client.sio.connect(server.url, auth={"token": alice.token}, transports=["websocket"])
    yield client
    await client.sio.disconnect()


def slow_chain() -> dict[str, Any]:
    nodes = [node("start", "start"), node("s1", config={"sleep": 0.3}), node("s2"), node("s3"), end()]
    ids = ["start", "s1", "s2", "s3", "end"]
    return definition(nodes, [edge(a, b) for a, b in itertools.pairwise(ids)])


async def test_a_joined_client_sees_the_snapshot_then_every_update_in_order(
    server: Server, alice: Account, watcher: Watcher
) -> None:
    started = await alice.client.post("/api/test-runs", json={**slow_chain(), "input": {"n": 1}})
    run_id = started.json()["instanceId"]

    assert await watcher.join(run_id) == {"ok": True}
    await asyncio.wait_for(watcher.finished.wait(), 10)

    names = [name for name, _ in watcher.events]
    assert names[0] == "workflow_run_snapshot"
    snapshot = watcher.events[0][1]
    assert snapshot["instanceID"] == run_id and snapshot["status"] == "RUNNING"
    assert names[-1] == "workflow_status_update"
    assert watcher.events[-1][1] == {
        "instanceID": run_id,
        "status": "COMPLETED",
        "output": {},
        "outputTruncated": None,
        "error": None,
    }

    state = {node_id: node_progress(view["attempt"], view["status"]) for node_id, view in snapshot["nodes"].items()}
    completed_order = []
    for name, data in watcher.events[1:]:
        if name != "workflow_node_update":
            continue
        # SPEC §9 keys, plus five the editor uses: pinned (a pinned test-run node), nextAttemptAt (retry
        # wait), childInstanceId (the run a workflow node called), waitingFor (what a WAITING wait node
        # waits for) and outputTruncated (an output too large to send: its size and where to read it)
        assert set(data) == {
            "instanceID",
            "nodeID",
            "iteration",
            "status",
            "attempt",
            "output",
            "outputTruncated",
            "error",
            "at",
            "pinned",
            "nextAttemptAt",
            "childInstanceId",
            "waitingFor",
        }
        assert data["instanceID"] == run_id and data["status"].isupper()
        step = node_progress(data["attempt"], data["status"])
        assert step > state.get(data["nodeID"], (0, -1)), f"{data['nodeID']} went back to {data['status']}"
        state[data["nodeID"]] = step
        if data["status"] == "COMPLETED":
            completed_order.append(data["nodeID"])
    chain = ["start", "s1", "s2", "s3", "end"]
    done_before = [n for n in chain if snapshot["nodes"].get(n, {}).get("status") == "COMPLETED"]
    assert done_before + completed_order == chain  # each completion seen once, in order
    assert "s1" in completed_order  # it was still sleeping when we joined
    ats = [data["at"] for name, data in watcher.events if name == "workflow_node_update"]
    assert ats == sorted(ats)


async def test_a_late_joiner_gets_the_finished_run_in_its_snapshot(
    server: Server, alice: Account, watcher: Watcher
) -> None:
    started = await alice.client.post("/api/test-runs", json={**slow_chain(), "pinned": {"s1": {"fast": True}}})
    run_id = started.json()["instanceId"]
    await server.engine.wait_for_run(run_id, 10)

    assert await watcher.join(run_id) == {"ok": True}
    await watcher.caught_up(alice)
    [(name, snapshot)] = watcher.of_run(run_id)
    assert name == "workflow_run_snapshot" and snapshot["status"] == "COMPLETED"
    assert {n: v["status"] for n, v in snapshot["nodes"].items()} == dict.fromkeys(
        ["start", "s1", "s2", "s3", "end"], "COMPLETED"
    )
    assert snapshot["nodes"]["s1"]["output"] == {"fast": True}


async def test_another_tenants_run_is_unknown_to_the_connection(
    server: Server, mallory: Account, alice: Account, watcher: Watcher
) -> None:
    started = await mallory.client.post("/api/test-runs", json=slow_chain())
    run_id = started.json()["instanceId"]

    assert await watcher.join(run_id) == {"ok": False, "error": "run not found"}
    assert await watcher.join("no-such-run") == {"ok": False, "error": "run not found"}
    assert (await watcher.sio.call("workflow_run_join", {"nothing": 1}, timeout=5))["ok"] is False
    await server.engine.wait_for_run(run_id, 10)
    await watcher.caught_up(alice)
    assert watcher.of_run(run_id) == []


async def test_leaving_a_run_stops_its_updates(server: Server, alice: Account, watcher: Watcher) -> None:
    started = await alice.client.post("/api/test-runs", json=slow_chain())
    run_id = started.json()["instanceId"]
    assert await watcher.join(run_id) == {"ok": True}
    assert await watcher.sio.call("workflow_run_leave", {"runId": run_id}, timeout=5) == {"ok": True}
    seen = len(watcher.events)
    await server.engine.wait_for_run(run_id, 10)
    await watcher.caught_up(alice)
    assert watcher.events[0][0] == "workflow_run_snapshot"
    assert watcher.of_run(run_id) == watcher.events[:seen]  # nothing after the leave was acknowledged


@pytest.mark.parametrize("auth", [None, {"token": "fdk_not-a-real-token-at-all"}, {"token": 42}])
async def test_a_connection_without_valid_credentials_is_refused(server: Server, auth: Any) -> None:
    client = socketio.AsyncClient(reconnection=False)
    with pytest.raises(socketio.exceptions.ConnectionError):
        await client.connect(server.url, auth=auth, transports=["websocket"])


async def test_the_session_cookie_authenticates_a_browser_connection(server: Server, alice: Account) -> None:
    async with server.client() as browser:
        login = await browser.post(
            "/api/auth/login", json={"email": alice.email, "password": "correct horse battery staple"}
        )
        cookie = login.cookies["flowdeck_session"]
    client = socketio.AsyncClient(reconnection=False)
    await client.connect(server.url, headers={"Cookie": f"flowdeck_session={cookie}"}, transports=["websocket"])
    try:
        started = await alice.client.post("/api/test-runs", json=slow_chain())
        ack = await client.call("workflow_run_join", {"runId": started.json()["instanceId"]}, timeout=5)
        assert ack == {"ok": True}
    finally:
        await client.disconnect()


async def _silent_client(server: Server, token: str, run_id: str) -> Any:
    """A client that joins a run over a raw websocket, then never reads again (its buffers fill up)."""
    ws = await websockets.connect(
        server.url.replace("http", "ws") + "/socket.io/?EIO=4&transport=websocket", max_queue=1, max_size=None
    )
    assert (await ws.recv()).startswith("0")  # engine.io open
    await ws.send("40" + json.dumps({"token": token}))
    assert (await ws.recv()).startswith("40")  # socket.io connected
    await ws.send("420" + json.dumps(["workflow_run_join", {"runId": run_id}]))
    return ws


async def test_a_client_that_stops_reading_does_not_stall_the_engine_or_other_clients(
    server: Server, alice: Account, watcher: Watcher
) -> None:
    branches = [f"b{i}" for i in range(32)]
    nodes = [node("start", "start"), node("gate", config={"sleep": 0.3})]
    nodes += [node(b, config={"output": "{{ ctx.input.blob }}"}) for b in branches]
    edges = [edge("start", "gate"), *(edge("gate", b) for b in branches), *(edge(b, "end") for b in branches)]
    graph = definition([*nodes, end()], edges)
    blob = "x" * 60_000  # each branch's output (sent in full: under 64 KiB), to every watcher: 1.9 MB in all
    started = await alice.client.post("/api/test-runs", json={**graph, "input": {"blob": blob}})
    run_id = started.json()["instanceId"]
    silent = await _silent_client(server, alice.token, run_id)
    try:
        assert await watcher.join(run_id) == {"ok": True}
        run = await server.engine.wait_for_run(run_id, 10)
        assert run.status.value == "COMPLETED"
        await asyncio.wait_for(watcher.finished.wait(), 10)
    finally:
        silent.transport.abort()
    completed = [d["nodeID"] for n, d in watcher.events if n == "workflow_node_update" and d["status"] == "COMPLETED"]
    assert sorted(b for b in completed if b.startswith("b")) == sorted(branches)
    assert all(
        d["output"] == blob
        for n, d in watcher.events
        if n == "workflow_node_update" and d["nodeID"] in branches and d["status"] == "COMPLETED"
    )


async def test_an_editor_of_a_workflow_hears_when_a_version_of_it_is_saved(
    server: Server, alice: Account, mallory: Account
) -> None:
    created = await alice.client.post("/api/workflows", json=slow_chain() | {"title": "Edited in two tabs"})
    workflow_id = created.json()["id"]
    saved: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
    tab = socketio.AsyncClient(reconnection=False)
    tab.on("workflow_saved", saved.put)
    intruder = socketio.AsyncClient(reconnection=False)
    await tab.connect(server.url, auth={"token": alice.token}, transports=["websocket"])
    await intruder.connect(server.url, auth={"token": mallory.token}, transports=["websocket"])
    try:
        assert await tab.call("workflow_join", {"workflowId": workflow_id}, timeout=5) == {"ok": True}
        # another tenant's workflow is unknown to mallory: the same answer as an id that does not exist
        refused = await intruder.call("workflow_join", {"workflowId": workflow_id}, timeout=5)
        unknown = await intruder.call("workflow_join", {"workflowId": "no-such-workflow"}, timeout=5)
        assert refused == unknown == {"ok": False, "error": "no such workflow"}
        assert (await tab.call("workflow_join", {"workflowId": "../x"}, timeout=5))["ok"] is False

        body = slow_chain() | {"title": "Edited in two tabs", "version": 1, "versionMessage": "from the other tab"}
        assert (await alice.client.put(f"/api/workflows/{workflow_id}", json=body)).status_code == 200
        notice = await asyncio.wait_for(saved.get(), 5)
        assert notice == {
            "workflowId": workflow_id,
            "version": 2,
            "author": alice.email,
            "message": "from the other tab",
        }
    finally:
        await tab.disconnect()
        await intruder.disconnect()


async def test_after_a_gap_in_the_live_updates_each_follower_is_sent_the_run_as_it_stands(
    server: Server, alice: Account, watcher: Watcher, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Updates from other processes can be lost on the way (the fan-out's connection to PostgreSQL or Redis
    dropped): the fan-out says so (``LocalPublisher.missed``) and every follower of a run gets a fresh
    snapshot, as after a reconnect of its own, instead of a page stuck on what it was last sent."""
    relay = server.app.realtime.relay
    assert relay is not None
    started = await alice.client.post("/api/test-runs", json=slow_chain())
    run_id = started.json()["instanceId"]
    assert await watcher.join(run_id) == {"ok": True}
    delivered = relay._deliver

    async def lost(update: Any) -> None:  # this run's updates never arrive, as if lost between processes
        if update.instance_id != run_id:
            await delivered(update)

    monkeypatch.setattr(relay, "_deliver", lost)
    await server.engine.wait_for_run(run_id, 10)
    await watcher.caught_up(alice)
    assert not any(name == "workflow_status_update" for name, _ in watcher.of_run(run_id))

    server.engine.publisher.missed()
    async with asyncio.timeout(10):
        while len(snapshots := [d for n, d in watcher.of_run(run_id) if n == "workflow_run_snapshot"]) < 2:
            await asyncio.sleep(0.01)
    assert snapshots[-1]["status"] == "COMPLETED"
    assert {n: v["status"] for n, v in snapshots[-1]["nodes"].items()} == dict.fromkeys(
        ["start", "s1", "s2", "s3", "end"], "COMPLETED"
    )
