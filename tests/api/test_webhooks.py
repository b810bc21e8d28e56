"""Webhooks over HTTP (SPEC §8, docs/api.md "Triggers"): secrets, POST /hooks/{id}, ?wait, tokens, tenants."""

from __future__ import annotations

import time
from typing import Any

import httpx
import pytest

from tests.api.conftest import Account, Server
from tests.support.graphs import definition, edge, end, node

pytestmark = pytest.mark.asyncio(loop_scope="module")


def echo(sleep: float = 0) -> dict[str, Any]:
    """start -> s -> end: the run's output is ``{"got": <the run input>}``; ``s`` sleeps ``sleep`` seconds."""
    return definition(
        [node("start", "start"), node("s", config={"sleep": sleep}), end(params={"got": "{{ ctx.input }}"})],
        [edge("start", "s"), edge("s", "end")],
    )


async def workflow(alice: Account, sleep: float = 0) -> str:
    response = await alice.client.post("/api/workflows", json=echo(sleep))
    assert response.status_code == 201, response.text
    return str(response.json()["id"])


async def new_secret(alice: Account, workflow_id: str) -> str:
    response = await alice.client.post(f"/api/workflows/{workflow_id}/webhook/secret")
    assert response.status_code == 201, response.text
    body = response.json()
    assert body["url"] == f"/hooks/{workflow_id}"
    assert body["secret"].startswith("fdh_") and len(body["secret"]) >= 40
    return str(body["secret"])


async def test_a_secret_starts_a_run_with_the_body_as_input(server: Server, alice: Account) -> None:
    workflow_id = await workflow(alice)
    before = (await alice.client.get(f"/api/workflows/{workflow_id}/webhook")).json()
    assert before == {"url": f"/hooks/{workflow_id}", "hasSecret": False, "createdAt": None, "lastUsedAt": None}
    secret = await new_secret(alice, workflow_id)
    async with server.client() as anonymous:
        answer = await anonymous.post(
            f"/hooks/{workflow_id}", json={"order": [1, 2]}, headers={"X-Flowdeck-Secret": secret}
        )
        assert answer.status_code == 202, answer.text
        assert list(answer.json()) == ["instanceId"]
        run = await server.engine.wait_for_run(answer.json()["instanceId"], 10)
        assert run.status.value == "COMPLETED"
        assert run.trigger == "webhook" and run.input == {"order": [1, 2]} and run.output == {"got": {"order": [1, 2]}}
        detail = (await alice.client.get(f"/api/runs/{run.id}")).json()
        assert detail["workflowId"] == workflow_id and detail["isTest"] is False

        empty = await anonymous.post(f"/hooks/{workflow_id}", headers={"X-Flowdeck-Secret": secret})
        assert empty.status_code == 202
        assert (await server.engine.wait_for_run(empty.json()["instanceId"], 10)).input is None

    info = (await alice.client.get(f"/api/workflows/{workflow_id}/webhook")).json()
    assert info["hasSecret"] is True and info["createdAt"] <= info["lastUsedAt"] <= time.time()


async def test_wait_answers_the_output_or_running(server: Server, alice: Account) -> None:
    quick, slow = await workflow(alice), await workflow(alice, sleep=3)
    async with server.client() as anonymous:
        secret = await new_secret(alice, quick)
        done = await anonymous.post(
            f"/hooks/{quick}?wait=10", content=b"[1, 2, 3]", headers={"X-Flowdeck-Secret": secret}
        )
        assert done.status_code == 200, done.text
        body = done.json()
        assert body == {
            "instanceId": body["instanceId"],
            "status": "COMPLETED",
            "output": {"got": [1, 2, 3]},
            "error": None,
        }

        secret = await new_secret(alice, slow)
        started = time.monotonic()
        pending = await anonymous.post(f"/hooks/{slow}?wait=0.3", json=1, headers={"X-Flowdeck-Secret": secret})
        assert pending.status_code == 202 and pending.json()["status"] == "RUNNING"
        assert time.monotonic() - started < 2.5
        await alice.client.post(f"/api/runs/{pending.json()['instanceId']}/cancel")

        for bad in ("0", "-1", "31", "abc"):
            refused = await anonymous.post(f"/hooks/{quick}?wait={bad}", headers={"X-Flowdeck-Secret": secret})
            assert refused.status_code == 400, bad
            assert "wait" in refused.text


async def test_wrong_or_missing_credentials_are_refused(server: Server, alice: Account, mallory: Account) -> None:
    workflow_id = await workflow(alice)
    async with server.client() as anonymous:
        # No secret yet: only API tokens.
        nothing = await anonymous.post(f"/hooks/{workflow_id}", json={})
        assert nothing.status_code == 401 and set(nothing.json()) == {"status_code", "detail"}
        guess = await anonymous.post(f"/hooks/{workflow_id}", headers={"X-Flowdeck-Secret": "fdh_guess"})
        assert guess.status_code == 401

        old = await new_secret(alice, workflow_id)
        assert (await anonymous.post(f"/hooks/{workflow_id}", headers={"X-Flowdeck-Secret": old})).status_code == 202
        new = await new_secret(alice, workflow_id)
        rotated = await anonymous.post(f"/hooks/{workflow_id}", headers={"X-Flowdeck-Secret": old})
        assert rotated.status_code == 401
        assert (await anonymous.post(f"/hooks/{workflow_id}", headers={"X-Flowdeck-Secret": new})).status_code == 202
        assert (await anonymous.post(f"/hooks/{workflow_id}", headers={"X-Flowdeck-Secret": ""})).status_code == 401

        # An unknown workflow is a 404 whatever the credentials.
        unknown = await anonymous.post(
            "/hooks/00000000-0000-0000-0000-000000000000", headers={"X-Flowdeck-Secret": new}
        )
        assert unknown.status_code == 404
        bad_token = await anonymous.post(f"/hooks/{workflow_id}", headers={"Authorization": "Bearer fdk_nope"})
        assert bad_token.status_code == 401

        # The session cookie is not a credential here.
        login = await anonymous.post(
            "/api/auth/login", json={"email": alice.email, "password": "correct horse battery staple"}
        )
        assert login.status_code == 200
        assert (await anonymous.post(f"/hooks/{workflow_id}")).status_code == 401

    # An API token of the tenant works; another tenant's token sees no such workflow.
    by_token = await alice.client.post(f"/hooks/{workflow_id}?wait=10", json={"a": 1})
    assert by_token.status_code == 200 and by_token.json()["output"] == {"got": {"a": 1}}
    foreign = await mallory.client.post(f"/hooks/{workflow_id}", json={"a": 1})
    assert foreign.status_code == 404
    assert foreign.json()["detail"] == f"workflow {workflow_id} not found"
    assert (await mallory.client.get(f"/api/workflows/{workflow_id}/webhook")).status_code == 404
    assert (await mallory.client.post(f"/api/workflows/{workflow_id}/webhook/secret")).status_code == 404


async def test_bad_bodies_and_deleted_workflows(server: Server, alice: Account) -> None:
    workflow_id = await workflow(alice)
    secret = await new_secret(alice, workflow_id)
    headers = {"X-Flowdeck-Secret": secret}
    async with server.client() as anonymous:
        not_json = await anonymous.post(f"/hooks/{workflow_id}", content=b"{nope", headers=headers)
        assert not_json.status_code == 400
        nul = await anonymous.post(f"/hooks/{workflow_id}", json={"a": "x\x00y"}, headers=headers)
        assert nul.status_code == 400 and nul.json()["extra"][0]["path"] == "input.a"
        deep: Any = 1
        for _ in range(70):
            deep = [deep]
        assert (await anonymous.post(f"/hooks/{workflow_id}", json=deep, headers=headers)).status_code == 400
        assert (await alice.client.delete(f"/api/workflows/{workflow_id}")).status_code == 204
        gone = await anonymous.post(f"/hooks/{workflow_id}", headers=headers)
        assert gone.status_code == 404
    assert (await alice.client.get(f"/api/workflows/{workflow_id}/webhook")).status_code == 404


async def test_hooks_are_not_the_editor(server: Server) -> None:
    async with httpx.AsyncClient(base_url=server.url) as client:
        assert (await client.get("/hooks/x")).status_code in (404, 405)


async def test_saving_invalid_schedules_is_a_400_naming_the_path(alice: Account) -> None:
    body = echo() | {"options": {"schedules": [{"cron": "0 9 * * *", "timezone": "Nowhere/City", "input": {"a": 1}}]}}
    refused = await alice.client.post("/api/workflows", json=body)
    assert refused.status_code == 400
    assert [(p["code"], p["path"]) for p in refused.json()["extra"]] == [
        ("invalid_schedule", "options.schedules[0].timezone")
    ]
    body["options"]["schedules"][0]["timezone"] = "Europe/Paris"
    saved = await alice.client.post("/api/workflows", json=body)
    assert saved.status_code == 201 and saved.json()["options"]["schedules"][0]["timezone"] == "Europe/Paris"
