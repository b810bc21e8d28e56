"""options.onFailure / onSlaBreach: the signed POST, its retries, the error workflow, the secret, the test button."""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import pytest
import pytest_asyncio
from aiohttp import web

from flowdeck.queries.secrets import SecretBox
from tests.api.conftest import Account, Server
from tests.support.graphs import definition, edge, end, node

pytestmark = pytest.mark.asyncio(loop_scope="module")


@dataclass
class Receiver:
    url: str
    answers: list[int] = field(default_factory=list)
    """Statuses to answer, in order (then 200)."""
    calls: list[tuple[dict[str, str], bytes, int]] = field(default_factory=list)
    arrived: asyncio.Queue[None] = field(default_factory=asyncio.Queue)

    async def next_call(self, timeout: float = 10) -> tuple[dict[str, str], bytes, int]:
        await asyncio.wait_for(self.arrived.get(), timeout)
        return self.calls[-1]


@pytest_asyncio.fixture(loop_scope="module")
async def receiver() -> AsyncIterator[Receiver]:
    state: dict[str, Receiver] = {}

    async def handle(request: web.Request) -> web.Response:
        me = state["r"]
        status = me.answers.pop(0) if me.answers else 200
        me.calls.append((dict(request.headers), await request.read(), status))
        me.arrived.put_nowait(None)
        return web.Response(status=status, text="ok")

    app = web.Application()
    app.router.add_post("/hook", handle)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    state["r"] = Receiver(f"http://127.0.0.1:{port}/hook")
    yield state["r"]
    await runner.cleanup()


@pytest.fixture(autouse=True)
def sending(server: Server) -> Any:
    """Notices are sent by the worker sweep (every second), with short retry delays for the test."""
    notifier = server.app.context.services.notifier
    notifier.retry_delays = (0.2, 0.2, 0.2)
    server.engine.worker.sweep_hooks.append(notifier.sweep_hook)
    yield notifier
    server.engine.worker.sweep_hooks.remove(notifier.sweep_hook)


def _failing(**options: Any) -> dict[str, Any]:
    return definition(
        [node("start", "start"), node("bad", config={"failTimes": 9, "retryable": False}), end()],
        [edge("start", "bad"), edge("bad", "end")],
        **options,
    )


def _fine(**options: Any) -> dict[str, Any]:
    return definition([node("start", "start"), end()], [edge("start", "end")], **options)


async def _create(account: Account, d: dict[str, Any]) -> dict[str, Any]:
    response = await account.client.post("/api/workflows", json=d)
    assert response.status_code == 201, response.text
    return response.json()  # type: ignore[no-any-return]


async def _wait_status(account: Account, run_id: str, statuses: set[str]) -> dict[str, Any]:
    for _ in range(200):
        run = (await account.client.get(f"/api/runs/{run_id}")).json()
        if run["status"] in statuses:
            return run  # type: ignore[no-any-return]
        await asyncio.sleep(0.05)
    raise AssertionError(f"run {run_id} never reached {statuses}")


def _verified(secret: str, headers: dict[str, str], body: bytes) -> bool:
    expected = "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()
    return hmac.compare_digest(expected, headers["X-Flowdeck-Signature"])


async def test_a_failed_run_notifies_the_url_signed_retries_after_500_and_starts_the_error_workflow(
    server: Server, alice: Account, receiver: Receiver
) -> None:
    handler = await _create(alice, _fine(title="on call"))
    flow = await _create(alice, _failing(onFailure={"workflowId": handler["id"], "url": receiver.url}))
    settings = (await alice.client.get(f"/api/workflows/{flow['id']}/notifications")).json()
    secret = settings["secret"]
    assert settings["hasSecret"] and secret.startswith("fdn_")
    again = (await alice.client.get(f"/api/workflows/{flow['id']}/notifications")).json()
    assert again["hasSecret"] and "secret" not in again  # shown once

    receiver.answers[:] = [500]
    started = await alice.client.post(f"/api/workflows/{flow['id']}/runs", json={"input": {"order": 7}})
    run_id = started.json()["instanceId"]
    failed = await _wait_status(alice, run_id, {"FAILED"})
    first_headers, first_body, first_status = await receiver.next_call()
    second_headers, second_body, second_status = await receiver.next_call()
    assert (first_status, second_status) == (500, 200)
    assert first_body == second_body and first_headers["X-Flowdeck-Delivery"] == second_headers["X-Flowdeck-Delivery"]
    assert _verified(secret, second_headers, second_body)
    assert not _verified("fdn_wrong", second_headers, second_body)
    payload = json.loads(second_body)
    assert payload["event"] == "failure"
    assert payload["workflow"] == {"id": flow["id"], "title": "test"}
    assert payload["run"] == {
        "instanceId": run_id,
        "workflowId": flow["id"],
        "version": 1,
        "status": "FAILED",
        "error": failed["error"],
        "failedNodeId": "bad",
        "input": {"order": 7},
        "startedAt": failed["startedAt"],
    }
    handled = (await alice.client.get("/api/runs", params={"workflowId": handler["id"]})).json()["items"]
    for _ in range(100):
        if handled:
            break
        await asyncio.sleep(0.05)
        handled = (await alice.client.get("/api/runs", params={"workflowId": handler["id"]})).json()["items"]
    assert len(handled) == 1 and handled[0]["trigger"] == "error"
    error_run = (await alice.client.get(f"/api/runs/{handled[0]['instanceId']}")).json()
    assert error_run["input"] == payload
    # The notice leaves the outbox once both its targets are done: the error workflow's start is seen
    # above a moment before that delete commits, so wait for it (a notice still pending fails here).
    outbox = server.app.context.services.notifier.outbox
    for _ in range(100):
        if not await outbox.pending(run_id):
            break
        await asyncio.sleep(0.05)
    assert await outbox.pending(run_id) == []


async def test_a_succeeded_run_notifies_nobody(
    server: Server, alice: Account, receiver: Receiver, sending: Any
) -> None:
    flow = await _create(alice, _fine(onFailure={"url": receiver.url}))
    calls = len(receiver.calls)
    run_id = (await alice.client.post(f"/api/workflows/{flow['id']}/runs", json={"input": {}})).json()["instanceId"]
    await _wait_status(alice, run_id, {"COMPLETED"})
    await sending.sweep(server.engine.worker.clock())  # whatever was due is handled by now
    assert await sending.outbox.pending(run_id) == []
    assert len(receiver.calls) == calls


async def test_an_error_workflow_whose_run_fails_does_not_trigger_itself(
    server: Server, alice: Account, sending: Any
) -> None:
    handler = await _create(alice, _failing())
    saved = await alice.client.put(
        f"/api/workflows/{handler['id']}",
        json={**_failing(onFailure={"workflowId": handler["id"]}), "version": 1},
    )
    assert saved.status_code == 200, saved.text
    run_id = (await alice.client.post(f"/api/workflows/{handler['id']}/runs", json={"input": {}})).json()["instanceId"]
    await _wait_status(alice, run_id, {"FAILED"})
    for _ in range(100):  # the notice is handled: one error run started
        runs = (await alice.client.get("/api/runs", params={"workflowId": handler["id"]})).json()["items"]
        if len(runs) == 2 and all(r["status"] == "FAILED" for r in runs) and not await sending.outbox.pending():
            break
        await asyncio.sleep(0.05)
    await sending.sweep(server.engine.worker.clock())
    runs = (await alice.client.get("/api/runs", params={"workflowId": handler["id"]})).json()["items"]
    assert sorted(r["trigger"] for r in runs) == ["api", "error"]


async def test_targets_are_checked_on_save(alice: Account, mallory: Account) -> None:
    theirs = await _create(mallory, _fine())
    response = await alice.client.post("/api/workflows", json=_fine(onFailure={"workflowId": theirs["id"]}))
    assert response.status_code == 400
    assert response.json()["extra"][0]["path"] == "options.onFailure.workflowId"
    response = await alice.client.post("/api/workflows", json=_fine(onSlaBreach={"url": "http://169.254.169.254/x"}))
    assert response.status_code == 400
    assert response.json()["extra"][0]["path"] == "options.onSlaBreach.url"
    response = await alice.client.post("/api/workflows", json=_fine(onFailure={"url": "ftp://example.com"}))
    assert response.status_code == 400
    assert "options.onFailure.url" in response.text


async def test_the_test_button_sends_a_signed_sample_and_reports_the_status(alice: Account, receiver: Receiver) -> None:
    flow = await _create(alice, _fine(onSlaBreach={"url": receiver.url}))
    secret = (await alice.client.get(f"/api/workflows/{flow['id']}/notifications")).json()["secret"]
    answer = await alice.client.post(f"/api/workflows/{flow['id']}/notifications/test", json={})
    assert answer.status_code == 200, answer.text
    assert answer.json() == {"url": receiver.url, "ok": True, "status": 200, "error": None}
    headers, body, _ = await receiver.next_call()
    assert _verified(secret, headers, body) and json.loads(body)["event"] == "test"
    rotated = (await alice.client.post(f"/api/workflows/{flow['id']}/notifications/secret")).json()["secret"]
    receiver.answers[:] = [503]
    answer = await alice.client.post(f"/api/workflows/{flow['id']}/notifications/test", json={"url": receiver.url})
    assert answer.json()["ok"] is False and answer.json()["status"] == 503
    headers, body, _ = await receiver.next_call()
    assert _verified(rotated, headers, body) and not _verified(secret, headers, body)
    refused = await alice.client.post(
        f"/api/workflows/{flow['id']}/notifications/test", json={"url": "http://169.254.169.254/latest"}
    )
    assert refused.status_code == 400 and "url" in refused.json()["detail"]


async def test_a_url_without_a_secret_key_is_refused_before_anything_is_saved(server: Server, alice: Account) -> None:
    notifier = server.app.context.services.notifier
    box = notifier.secrets.box
    notifier.secrets.box = SecretBox(None)
    try:
        response = await alice.client.post("/api/workflows", json=_fine(onFailure={"url": "https://example.com/x"}))
    finally:
        notifier.secrets.box = box
    assert response.status_code == 400
    assert response.json()["extra"][0]["path"] == "options.onFailure.url"
    assert "FLOWDECK_SECRET_KEY" in response.text
    listed = (await alice.client.get("/api/workflows")).json()["items"]
    assert listed == []
