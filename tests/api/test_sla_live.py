"""An SLA breach as a user sees it: the Socket.IO event, slaBreachedAt in the run and the list, the notice."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
import socketio

from tests.api.conftest import Account, Server
from tests.api.test_notifications import Receiver, _verified, receiver  # noqa: F401 - the receiver fixture
from tests.support.graphs import definition, edge, end, node

pytestmark = pytest.mark.asyncio(loop_scope="module")


async def test_a_slow_run_is_marked_announced_and_notified_and_goes_on(
    server: Server,
    alice: Account,
    receiver: Receiver,  # noqa: F811
) -> None:
    notifier = server.app.context.services.notifier
    server.engine.worker.sweep_hooks.append(notifier.sweep_hook)
    breaches: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
    client = socketio.AsyncClient(reconnection=False)
    client.on("workflow_sla_breach", breaches.put)
    await client.connect(server.url, auth={"token": alice.token}, transports=["websocket"])
    try:
        d = definition(
            [node("start", "start"), node("slow", config={"sleep": 2.5}), end()],
            [edge("start", "slow"), edge("slow", "end")],
            slaSeconds=0.5,
            onSlaBreach={"url": receiver.url},
        )
        flow = (await alice.client.post("/api/workflows", json=d)).json()
        secret = (await alice.client.get(f"/api/workflows/{flow['id']}/notifications")).json()["secret"]
        run_id = (await alice.client.post(f"/api/workflows/{flow['id']}/runs", json={"input": {}})).json()["instanceId"]
        assert (await client.call("workflow_run_join", {"runId": run_id}, timeout=5)) == {"ok": True}
        event = await asyncio.wait_for(breaches.get(), 5)
        run = (await alice.client.get(f"/api/runs/{run_id}")).json()
        assert event == {"instanceID": run_id, "slaSeconds": 0.5, "at": run["slaBreachedAt"]}
        assert run["status"] == "RUNNING"  # the run goes on
        assert run["startedAt"] + 0.5 <= run["slaBreachedAt"] <= run["startedAt"] + 0.5 + 1.5  # swept every second
        headers, body, _ = await receiver.next_call()
        payload = json.loads(body)
        assert payload["event"] == "sla_breach" and payload["run"]["instanceId"] == run_id
        assert payload["run"]["status"] == "RUNNING"
        assert _verified(secret, headers, body)
        listed = (await alice.client.get("/api/runs", params={"workflowId": flow["id"]})).json()["items"]
        assert [r["slaBreachedAt"] for r in listed] == [run["slaBreachedAt"]]
        for _ in range(100):
            done = (await alice.client.get(f"/api/runs/{run_id}")).json()
            if done["status"] == "COMPLETED":
                break
            await asyncio.sleep(0.05)
        assert done["status"] == "COMPLETED" and done["slaBreachedAt"] == run["slaBreachedAt"]
        events = (await alice.client.get(f"/api/runs/{run_id}/events")).json()["items"]
        assert [e["eventType"] for e in events].count("RUN_SLA_BREACHED") == 1
    finally:
        await client.disconnect()
        server.engine.worker.sweep_hooks.remove(notifier.sweep_hook)
