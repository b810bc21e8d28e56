"""options.onFailure / onSlaBreach: the signed POST, its retries, the error workflow, the secret, the test button.

Deliveries are checked as receivers check them: with the ``standardwebhooks`` package (the Standard
Webhooks reference library for Python) and with the receiver docs/operations.md shows, run from the
page itself so the documentation cannot drift from what is sent.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import hmac
import json
import re
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from aiohttp import web
from standardwebhooks.webhooks import Webhook, WebhookVerificationError

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
    """Verified the Standard Webhooks way (the key as docs/operations.md says to pass it), and the old way."""
    try:
        Webhook("whsec_" + base64.b64encode(secret.encode()).decode()).verify(body, headers)
    except WebhookVerificationError:
        return False
    expected = "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()
    assert hmac.compare_digest(expected, headers["X-Flowdeck-Signature"])  # deprecated, still sent
    return True


OPERATIONS_MD = Path(__file__).parents[2] / "docs" / "operations.md"


def _documented_receiver() -> dict[str, Any]:
    """The Python receiver of docs/operations.md "Notifications", as a fresh module (nothing handled yet)."""
    text = OPERATIONS_MD.read_text(encoding="utf-8")
    blocks = [m for m in re.finditer(r"```python\n(.*?)```", text, re.DOTALL) if "def verify(" in m[1]]
    (block,) = blocks
    code = "\n" * text.count("\n", 0, block.start(1)) + block[1]  # tracebacks point at the page's lines
    namespace: dict[str, Any] = {}
    exec(compile(code, str(OPERATIONS_MD), "exec"), namespace)  # the project's own documentation, as written
    return namespace


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
    assert first_body == second_body
    # The retry is the same delivery (same webhook-id), signed again at the time it was sent.
    assert first_headers["webhook-id"] == second_headers["webhook-id"] == second_headers["X-Flowdeck-Delivery"]
    assert first_headers["webhook-id"].startswith("msg_")
    assert int(first_headers["webhook-timestamp"]) <= int(second_headers["webhook-timestamp"])
    assert _verified(secret, first_headers, first_body) and _verified(secret, second_headers, second_body)
    assert not _verified("fdn_wrong", second_headers, second_body)
    receiver_doc = _documented_receiver()
    assert receiver_doc["verify"](secret, second_headers, second_body) == second_headers["webhook-id"]
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


async def test_a_captured_delivery_cannot_be_replayed_to_the_documented_receiver(
    alice: Account, receiver: Receiver
) -> None:
    flow = await _create(alice, _fine(onFailure={"url": receiver.url}))
    secret = (await alice.client.get(f"/api/workflows/{flow['id']}/notifications")).json()["secret"]
    answer = await alice.client.post(f"/api/workflows/{flow['id']}/notifications/test", json={})
    assert answer.json()["ok"] is True
    headers, body, _ = await receiver.next_call()
    Webhook(secret.encode()).verify(body, headers)  # the library also takes the key's bytes as they are

    doc = _documented_receiver()
    verify, rejected, repeated = doc["verify"], doc["Rejected"], doc["Repeated"]
    sent_at = int(headers["webhook-timestamp"])
    msg_id = verify(secret, headers, body)
    assert msg_id == headers["webhook-id"]
    doc["done"](msg_id)
    with pytest.raises(repeated):  # the same delivery again: handled already
        verify(secret, headers, body)

    forged: list[tuple[str, dict[str, str], bytes, float | None]] = [
        ("captured, replayed later", headers, body, sent_at + 301),
        ("a fresh timestamp on a captured delivery", {**headers, "webhook-timestamp": str(sent_at + 60)}, body, None),
        ("another id on a captured delivery", {**headers, "webhook-id": "msg_new"}, body, None),
        ("a changed body", headers, body.replace(b'"test"', b'"failure"'), None),
        ("no signature", {k: v for k, v in headers.items() if k != "webhook-signature"}, body, None),
    ]
    for what, sent_headers, sent_body, now in forged:
        with pytest.raises(rejected) as refused:
            verify(secret, sent_headers, sent_body, now=now)
        assert not isinstance(refused.value, repeated), what
        if now is None:  # the reference library refuses them too
            with pytest.raises(WebhookVerificationError):
                Webhook(secret.encode()).verify(sent_body, sent_headers)
    doc["handled"].clear()
    with pytest.raises(rejected):
        verify("fdn_another_workflows_secret", headers, body)


async def test_every_notification_has_a_delivery_id_of_its_own(alice: Account, receiver: Receiver) -> None:
    """Ids are never reused, even where the outbox reuses the row id of a sent notice (SQLite)."""
    flow = await _create(alice, _failing(onFailure={"url": receiver.url}))
    ids = []
    for _ in range(2):
        run_id = (await alice.client.post(f"/api/workflows/{flow['id']}/runs", json={"input": {}})).json()["instanceId"]
        await _wait_status(alice, run_id, {"FAILED"})
        headers, body, _ = await receiver.next_call()
        assert json.loads(body)["run"]["instanceId"] == run_id
        ids.append(headers["webhook-id"])
    assert ids[0] != ids[1]
