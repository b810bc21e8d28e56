"""Approvals (docs/waits.md "Approvals") over HTTP, on both databases: a ``wait`` node with ``resumeOn:
"approval"`` parks until the tenant's users decide through ``/api/approvals``: self-approval refused,
another tenant's user a 404, ``required: 2`` needs two distinct users, a rejection takes ``rejected`` or
fails the node, a timeout or a cancel closes it, a decision racing the timeout has one winner, and it
works in a loop body, in a child run (the caller waits) and in a test run (its designer decides alone)."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import AsyncIterator
from typing import Any

import pytest
import pytest_asyncio

from tests.api.conftest import Account, Server
from tests.api.test_socketio import Watcher
from tests.api.test_waits import is_waiting, until_seen
from tests.support.graphs import definition, edge, end, node
from tests.support.waiting import until

pytestmark = pytest.mark.asyncio(loop_scope="module")


@pytest_asyncio.fixture(loop_scope="module")
async def bob(server: Server, alice: Account) -> AsyncIterator[Account]:
    """Another user of alice's tenant."""
    account = await server.account(f"bob-{uuid.uuid4().hex[:8]}@acme.test", alice.tenant)
    async with account.client:
        yield account


@pytest_asyncio.fixture(loop_scope="module")
async def carol(server: Server, alice: Account) -> AsyncIterator[Account]:
    """A third user of alice's tenant."""
    account = await server.account(f"carol-{uuid.uuid4().hex[:8]}@acme.test", alice.tenant)
    async with account.client:
        yield account


def approval(config: dict[str, Any], *, rejected_edge: bool = False, timeout_edge: bool = False) -> dict[str, Any]:
    nodes = [
        node("start", "start"),
        node("ok", "wait", label="Sign off", config={"resumeOn": "approval", **config}),
        end(params={"got": "{{ ctx.ok }}"}),
    ]
    edges = [edge("start", "ok"), edge("ok", "end", "success")]
    if rejected_edge:
        nodes.append(end("no", params={"rejected": "{{ ctx.ok.decision }}"}))
        edges.append(edge("ok", "no", "rejected"))
    if timeout_edge:
        nodes.append(end("late", params={"late": "{{ ctx.ok.timedOut }}"}))
        edges.append(edge("ok", "late", "timeout"))
    return definition(nodes, edges, timeoutSeconds=600)


async def save(account: Account, graph: dict[str, Any]) -> str:
    created = await account.client.post("/api/workflows", json=graph)
    assert created.status_code == 201, created.text
    return str(created.json()["id"])


async def run(account: Account, workflow_id: str) -> str:
    started = await account.client.post(f"/api/workflows/{workflow_id}/runs", json={"input": {}})
    assert started.status_code == 202, started.text
    return str(started.json()["instanceId"])


async def waiting_approval(account: Account, run_id: str, node_id: str = "ok") -> str:
    shown = (await until_seen(account, run_id, is_waiting(node_id)))["nodes"][node_id]["waitingFor"]
    assert shown["resumeOn"] == "approval" and shown["url"] == f"/approvals/{shown['approvalId']}"
    return str(shown["approvalId"])


async def decide(account: Account, approval_id: str, decision: str, comment: str | None = None) -> Any:
    body: dict[str, Any] = {"decision": decision}
    if comment is not None:
        body["comment"] = comment
    return await account.client.post(f"/api/approvals/{approval_id}", json=body)


async def listed(account: Account) -> list[str]:
    page = await account.client.get("/api/approvals")
    assert page.status_code == 200, page.text
    return [item["id"] for item in page.json()["items"]]


async def finished(server: Server, account: Account, run_id: str) -> dict[str, Any]:
    await server.engine.wait_for_run(run_id, 20)
    return dict((await account.client.get(f"/api/runs/{run_id}")).json())


async def test_another_user_approves_the_requester_may_not(
    server: Server, alice: Account, bob: Account, mallory: Account
) -> None:
    run_id = await run(alice, await save(alice, approval({})))
    approval_id = await waiting_approval(alice, run_id)

    assert approval_id in await listed(bob)
    assert approval_id not in await listed(alice)  # she started the run: not hers to decide
    assert approval_id not in await listed(mallory)
    item = next(i for i in (await bob.client.get("/api/approvals")).json()["items"] if i["id"] == approval_id)
    assert item["instanceId"] == run_id and item["nodeId"] == "ok" and item["nodeLabel"] == "Sign off"
    assert item["requestedBy"] == alice.email and item["status"] == "pending" and item["canDecide"] is True
    assert item["until"] == pytest.approx(time.time() + 7 * 24 * 3600, abs=120)

    refused = await decide(alice, approval_id, "approve")
    assert refused.status_code == 403 and "self-approval" in refused.json()["detail"]
    assert (await decide(mallory, approval_id, "approve")).status_code == 404
    assert (await mallory.client.get(f"/api/approvals/{approval_id}")).status_code == 404
    assert (await decide(bob, str(uuid.uuid4()), "approve")).status_code == 404
    bad = await decide(bob, approval_id, "maybe")
    assert bad.status_code == 400 and "decision" in bad.text

    granted = await decide(bob, approval_id, "approve", "looks right")
    assert granted.status_code == 200, granted.text
    assert granted.json()["status"] == "approved"
    done = await finished(server, alice, run_id)
    assert done["status"] == "COMPLETED", done["error"]
    got = done["output"]["got"]
    assert got["decision"] == "approve"
    assert [(d["email"], d["decision"], d["comment"]) for d in got["decisions"]] == [
        (bob.email, "approve", "looks right")
    ]
    assert (await decide(bob, approval_id, "approve")).status_code == 409
    assert approval_id not in await listed(bob)


async def test_the_list_pages_and_skips_what_the_caller_decided(alice: Account, bob: Account) -> None:
    workflow_id = await save(alice, approval({"required": 2}))
    runs = [await run(alice, workflow_id) for _ in range(4)]
    ids = [await waiting_approval(alice, run_id) for run_id in runs]
    assert (await decide(bob, ids[1], "approve")).status_code == 200  # counted: bob may not decide it again
    first = (await bob.client.get("/api/approvals?limit=2")).json()
    assert [i["id"] for i in first["items"]] == [ids[0], ids[2]] and first["nextCursor"]
    second = (await bob.client.get(f"/api/approvals?limit=2&cursor={first['nextCursor']}")).json()
    assert [i["id"] for i in second["items"]] == [ids[3]] and second["nextCursor"] is None
    assert (await bob.client.get("/api/approvals?cursor=nonsense")).status_code == 400
    for run_id in runs:
        await alice.client.post(f"/api/runs/{run_id}/cancel")


async def test_a_run_started_by_a_webhook_or_schedule_has_no_requester(server: Server, alice: Account) -> None:
    workflow_id = await save(alice, approval({}))
    tenant_id = await server.engine.tenants.ensure(alice.tenant)
    run_id = await server.engine.start_workflow_run(tenant_id, workflow_id, {}, trigger="schedule")
    approval_id = await waiting_approval(alice, run_id)
    shown = (await alice.client.get(f"/api/approvals/{approval_id}")).json()
    assert shown["requestedBy"] is None and shown["canDecide"] is True
    assert (await decide(alice, approval_id, "approve")).status_code == 200
    assert (await finished(server, alice, run_id))["status"] == "COMPLETED"


async def test_required_two_needs_two_distinct_users(
    server: Server, alice: Account, bob: Account, carol: Account
) -> None:
    run_id = await run(alice, await save(alice, approval({"required": 2})))
    approval_id = await waiting_approval(alice, run_id)
    first = await decide(bob, approval_id, "approve")
    assert first.status_code == 200 and first.json()["status"] == "pending"
    assert (await decide(bob, approval_id, "approve")).status_code == 409  # bob decided already
    assert approval_id not in await listed(bob) and approval_id in await listed(carol)
    run_now = (await alice.client.get(f"/api/runs/{run_id}")).json()
    assert run_now["status"] == "RUNNING" and run_now["nodes"]["ok"]["status"] == "WAITING"

    second = await decide(carol, approval_id, "approve")
    assert second.status_code == 200 and second.json()["status"] == "approved"
    done = await finished(server, alice, run_id)
    assert [d["email"] for d in done["output"]["got"]["decisions"]] == [bob.email, carol.email]


async def test_two_approvals_at_once_are_both_counted(
    server: Server, alice: Account, bob: Account, carol: Account
) -> None:
    run_id = await run(alice, await save(alice, approval({"required": 2})))
    approval_id = await waiting_approval(alice, run_id)
    answers = await asyncio.gather(decide(bob, approval_id, "approve"), decide(carol, approval_id, "approve"))
    assert [a.status_code for a in answers] == [200, 200]
    assert sorted(a.json()["status"] for a in answers) == ["approved", "pending"]
    done = await finished(server, alice, run_id)
    assert done["status"] == "COMPLETED" and len(done["output"]["got"]["decisions"]) == 2


async def test_only_listed_approvers_decide(server: Server, alice: Account, bob: Account, carol: Account) -> None:
    run_id = await run(alice, await save(alice, approval({"approvers": [carol.email.upper()]})))
    approval_id = await waiting_approval(alice, run_id)
    assert approval_id not in await listed(bob)
    refused = await decide(bob, approval_id, "approve")
    assert refused.status_code == 403 and "not among" in refused.json()["detail"]
    assert (await decide(carol, approval_id, "approve")).status_code == 200
    assert (await finished(server, alice, run_id))["status"] == "COMPLETED"


async def test_self_approval_when_allowed(server: Server, alice: Account) -> None:
    run_id = await run(alice, await save(alice, approval({"allowSelfApproval": True})))
    approval_id = await waiting_approval(alice, run_id)
    assert approval_id in await listed(alice)
    assert (await decide(alice, approval_id, "approve")).status_code == 200
    assert (await finished(server, alice, run_id))["status"] == "COMPLETED"


async def test_a_rejection_takes_the_rejected_handle(server: Server, alice: Account, bob: Account) -> None:
    run_id = await run(alice, await save(alice, approval({"required": 2}, rejected_edge=True)))
    approval_id = await waiting_approval(alice, run_id)
    rejected = await decide(bob, approval_id, "reject", "too expensive")
    assert rejected.status_code == 200 and rejected.json()["status"] == "rejected"  # at once, though 2 required
    done = await finished(server, alice, run_id)
    assert done["status"] == "COMPLETED", done["error"]
    assert done["output"] == {"rejected": "reject"}
    assert done["nodes"]["end"]["status"] == "SKIPPED"


async def test_a_rejection_nothing_takes_fails_the_node(server: Server, alice: Account, bob: Account) -> None:
    run_id = await run(alice, await save(alice, approval({})))
    approval_id = await waiting_approval(alice, run_id)
    assert (await decide(bob, approval_id, "reject", "no budget")).status_code == 200
    done = await finished(server, alice, run_id)
    assert done["status"] == "FAILED"
    assert done["nodes"]["ok"]["error"] == f"node 'ok' was rejected by {bob.email}: no budget"


async def test_a_timeout_closes_the_approval(server: Server, alice: Account, bob: Account) -> None:
    run_id = await run(alice, await save(alice, approval({"timeoutSeconds": 0.5}, timeout_edge=True)))
    approval_id = await waiting_approval(alice, run_id)
    done = await finished(server, alice, run_id)
    assert done["output"] == {"late": True}
    late = await decide(bob, approval_id, "approve")
    assert late.status_code == 409 and "no longer pending" in late.json()["detail"]
    shown = (await bob.client.get(f"/api/approvals/{approval_id}")).json()
    assert shown["status"] == "closed" and shown["canDecide"] is False


async def test_a_cancel_closes_the_approval(server: Server, alice: Account, bob: Account) -> None:
    run_id = await run(alice, await save(alice, approval({})))
    approval_id = await waiting_approval(alice, run_id)
    assert (await alice.client.post(f"/api/runs/{run_id}/cancel")).status_code in (200, 202)
    assert (await decide(bob, approval_id, "approve")).status_code == 409
    assert approval_id not in await listed(bob)
    run_now = (await alice.client.get(f"/api/runs/{run_id}")).json()
    assert run_now["status"] == "CANCELLED" and run_now["nodes"]["ok"]["status"] == "CANCELLED"


async def test_a_decision_racing_a_cancel_has_one_winner(alice: Account, bob: Account) -> None:
    workflow_id = await save(alice, approval({}))
    for _ in range(3):
        run_id = await run(alice, workflow_id)
        approval_id = await waiting_approval(alice, run_id)
        decided, cancelled = await asyncio.gather(
            decide(bob, approval_id, "approve"), alice.client.post(f"/api/runs/{run_id}/cancel")
        )
        shown = (await bob.client.get(f"/api/approvals/{approval_id}")).json()
        if decided.status_code == 200:  # the decision first: the cancel came after it
            assert shown["status"] == "approved"
        else:  # the cancel first: the decision found the run ended
            assert decided.status_code == 409 and cancelled.status_code in (200, 202)
            assert shown["status"] == "closed" and shown["decisions"] == []


async def test_a_decision_racing_the_timeout_has_one_winner(server: Server, alice: Account, bob: Account) -> None:
    workflow_id = await save(alice, approval({}, timeout_edge=True))
    for _ in range(4):
        run_id = await run(alice, workflow_id)
        approval_id = await waiting_approval(alice, run_id)
        decided, timed_out = await asyncio.gather(
            decide(bob, approval_id, "approve"), server.engine.waits.time_out(run_id, "ok", "")
        )
        assert (decided.status_code == 200) != timed_out, (decided.status_code, timed_out)
        if timed_out:
            # the node is parked until its own timeout (7 days): end the run instead of waiting for it
            assert decided.status_code == 409
            await alice.client.post(f"/api/runs/{run_id}/cancel")
        else:
            done = await finished(server, alice, run_id)
            assert done["output"]["got"]["decision"] == "approve"


async def test_approvals_in_a_loop_body_one_per_item(server: Server, alice: Account, bob: Account) -> None:
    graph = definition(
        [
            node("start", "start"),
            node("each", "loop", config={"items": ["a", "b"], "concurrency": 2}),
            node("ok", "wait", config={"resumeOn": "approval"}),
            end(params={"all": "{{ ctx.each.items }}"}),
        ],
        [edge("start", "each"), edge("each", "ok", "loop"), edge("each", "end", "done")],
        timeoutSeconds=600,
    )
    run_id = await run(alice, await save(alice, graph))

    def both(view: dict[str, Any]) -> bool:
        its = view["nodes"].get("ok", {}).get("iterations") or {}
        return len([i for i in its.values() if i["status"] == "WAITING"]) == 2

    shown = (await until_seen(alice, run_id, both))["nodes"]["ok"]["iterations"]
    ids = {key: it["waitingFor"]["approvalId"] for key, it in shown.items()}
    assert len(set(ids.values())) == 2
    assert set(ids.values()) <= set(await listed(bob))
    for approval_id in ids.values():
        assert (await decide(bob, approval_id, "approve")).status_code == 200
    done = await finished(server, alice, run_id)
    assert done["status"] == "COMPLETED", done["error"]
    assert [item["decision"] for item in done["output"]["all"]] == ["approve", "approve"]


async def test_the_caller_of_a_child_waits_for_its_approval(server: Server, alice: Account, bob: Account) -> None:
    child_id = await save(alice, approval({}))
    caller = definition(
        [
            node("start", "start"),
            node("call", "workflow", config={"workflowId": child_id}, timeoutSeconds=600),
            end(params={"fromChild": "{{ ctx.call.got.decision }}"}),
        ],
        [edge("start", "call"), edge("call", "end", "success")],
        timeoutSeconds=600,
    )
    parent_id = await run(alice, await save(alice, caller))
    child_run = (await until_seen(alice, parent_id, lambda r: bool(r["nodes"].get("call", {}).get("childInstanceId"))))[
        "nodes"
    ]["call"]["childInstanceId"]
    approval_id = await waiting_approval(alice, child_run)
    item = (await bob.client.get(f"/api/approvals/{approval_id}")).json()
    assert item["requestedBy"] == alice.email  # the child's requester is its caller's
    assert (await decide(alice, approval_id, "approve")).status_code == 403
    parent = (await alice.client.get(f"/api/runs/{parent_id}")).json()
    assert parent["status"] == "RUNNING"  # the caller waits for the child's approval
    assert (await decide(bob, approval_id, "approve")).status_code == 200
    done = await finished(server, alice, parent_id)
    assert done["status"] == "COMPLETED", done["error"]
    assert done["output"] == {"fromChild": "approve"}


async def test_a_test_runs_designer_decides_it_alone(
    server: Server, alice: Account, bob: Account, carol: Account
) -> None:
    graph = approval({"required": 2, "approvers": [bob.email, carol.email]})
    started = await alice.client.post("/api/test-runs", json=graph)
    assert started.status_code == 202, started.text
    run_id = started.json()["instanceId"]
    approval_id = await waiting_approval(alice, run_id)
    assert approval_id in await listed(alice)
    assert (await decide(alice, approval_id, "approve")).status_code == 200
    done = await finished(server, alice, run_id)
    assert done["status"] == "COMPLETED" and done["output"]["got"]["decision"] == "approve"


async def test_bad_approval_configs_name_the_field(alice: Account, bob: Account) -> None:
    for config, key, words in [
        ({"approvers": ["not-an-email"]}, "config.approvers[0]", "email"),
        ({"approvers": [bob.email], "required": 2}, "config.required", "only 1 approver"),
        ({"required": 0}, "config.required", "at least 1"),
        ({"allowSelfApproval": "yes"}, "config.allowSelfApproval", "true or false"),
        ({"approvers": ["someone@elsewhere.test"]}, "config.approvers[0]", "not a user of this tenant"),
    ]:
        refused = await alice.client.post("/api/workflows", json=approval(config))
        assert refused.status_code == 400, refused.text
        problems = refused.json()["extra"]
        assert any(p["path"] == key and words in p["message"] for p in problems), problems
    webhook = approval({}, rejected_edge=True)
    webhook["nodes"][1]["config"] = {"resumeOn": "webhook", "approvers": []}
    refused = await alice.client.post("/api/workflows", json=webhook)
    assert refused.status_code == 400
    messages = " ".join(p["message"] for p in refused.json()["extra"])
    assert "'rejected'" in messages and 'approvers is for resumeOn "approval" only' in messages


async def test_a_counted_decision_is_announced_live(
    server: Server, alice: Account, bob: Account, carol: Account
) -> None:
    """1 of 2 approvals: the watching run page hears the node again, still WAITING, with the decisions so far."""
    run_id = await run(alice, await save(alice, approval({"required": 2})))
    approval_id = await waiting_approval(alice, run_id)
    watcher = Watcher()
    await watcher.sio.connect(server.url, auth={"token": alice.token}, transports=["websocket"])
    try:
        assert await watcher.join(run_id) == {"ok": True}
        assert (await decide(bob, approval_id, "approve", "fine by me")).json()["status"] == "pending"
        seen = await until(
            lambda: [d for _, d in watcher.of_run(run_id) if (d.get("waitingFor") or {}).get("decisions")],
            what="an update carrying the first decision",
        )
        shown = seen[0]
        assert (shown["nodeID"], shown["status"]) == ("ok", "WAITING")
        assert shown["waitingFor"]["approvalId"] == approval_id and shown["waitingFor"]["required"] == 2
        assert [(d["email"], d["decision"], d["comment"]) for d in shown["waitingFor"]["decisions"]] == [
            (bob.email, "approve", "fine by me")
        ]
        assert "userId" not in shown["waitingFor"]["decisions"][0]  # user ids never leave the API
        reloaded = (await alice.client.get(f"/api/runs/{run_id}")).json()["nodes"]["ok"]["waitingFor"]
        assert reloaded["required"] == 2 and reloaded["decisions"] == shown["waitingFor"]["decisions"]

        assert (await decide(carol, approval_id, "approve")).json()["status"] == "approved"
        done = await finished(server, alice, run_id)
        assert done["status"] == "COMPLETED"
    finally:
        await watcher.sio.disconnect()


async def test_an_approval_nodes_url_is_known_from_the_runs_start(server: Server, alice: Account, bob: Account) -> None:
    """``ctx.run.resumeUrls`` names an approval node too (its page in the editor), for earlier nodes to send."""
    graph = approval({})
    link = {"link": "{{ ctx.run.resumeUrls.ok }}", "got": "{{ ctx.ok.decision }}"}
    graph["nodes"][2]["config"]["outputParameters"] = link
    run_id = await run(alice, await save(alice, graph))
    approval_id = await waiting_approval(alice, run_id)
    assert (await decide(bob, approval_id, "approve")).json()["status"] == "approved"
    done = await finished(server, alice, run_id)
    assert done["output"] == {"link": f"/approvals/{approval_id}", "got": "approve"}
