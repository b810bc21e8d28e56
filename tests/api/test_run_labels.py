"""Run labels over HTTP: set by POST /api/workflows/{id}/runs and by webhooks, shown on the run and in the
list, searched with ``?label.name=value`` (several: all must match); the limits answer 400 naming the
field. And the list's caller filter (``parentInstanceId``)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.api.conftest import Account, Server
from tests.support.graphs import definition, edge, end, linear, node

pytestmark = pytest.mark.asyncio(loop_scope="module")


async def create(account: Account, graph: dict[str, Any]) -> str:
    response = await account.client.post("/api/workflows", json=graph)
    assert response.status_code == 201, response.text
    return str(response.json()["id"])


async def start(server: Server, account: Account, workflow_id: str, **body: Any) -> str:
    response = await account.client.post(f"/api/workflows/{workflow_id}/runs", json=body)
    assert response.status_code == 202, response.text
    run_id = str(response.json()["instanceId"])
    await server.engine.wait_for_run(run_id, 10)
    return run_id


async def listed(account: Account, **params: Any) -> list[str]:
    response = await account.client.get("/api/runs", params=params)
    assert response.status_code == 200, response.text
    return [r["instanceId"] for r in response.json()["items"]]


async def test_labels_from_the_api_show_on_the_run_and_filter_the_list(server: Server, alice: Account) -> None:
    workflow_id = await create(alice, linear(1))
    acme_eu = await start(server, alice, workflow_id, labels={"customer": "acme", "region": "eu"})
    acme_us = await start(server, alice, workflow_id, labels={"customer": "acme", "region": "us"})
    globex = await start(server, alice, workflow_id, labels={"customer": "globex"})
    plain = await start(server, alice, workflow_id)

    detail = (await alice.client.get(f"/api/runs/{acme_eu}")).json()
    assert detail["labels"] == {"customer": "acme", "region": "eu"}
    assert (await alice.client.get(f"/api/runs/{plain}")).json()["labels"] == {}
    items = {r["instanceId"]: r["labels"] for r in (await alice.client.get("/api/runs")).json()["items"]}
    assert items == {
        acme_eu: {"customer": "acme", "region": "eu"},
        acme_us: {"customer": "acme", "region": "us"},
        globex: {"customer": "globex"},
        plain: {},
    }

    assert await listed(alice, **{"label.customer": "acme"}) == [acme_us, acme_eu]
    assert await listed(alice, **{"label.customer": "acme", "label.region": "eu"}) == [acme_eu]
    assert await listed(alice, **{"label.customer": "globex", "label.region": "eu"}) == []
    assert await listed(alice, **{"label.customer": "acme", "status": "COMPLETED", "workflowId": workflow_id}) == [
        acme_us,
        acme_eu,
    ]
    assert await listed(alice, **{"label.customer": "acme", "status": "FAILED"}) == []
    # Pages by cursor through a label's runs.
    first = (await alice.client.get("/api/runs", params={"label.customer": "acme", "limit": 1})).json()
    rest = await listed(alice, **{"label.customer": "acme", "limit": 1, "cursor": first["nextCursor"]})
    assert [first["items"][0]["instanceId"], *rest] == [acme_us, acme_eu]


async def test_labels_are_per_tenant(server: Server, alice: Account, mallory: Account) -> None:
    workflow_id = await create(alice, linear(1))
    await start(server, alice, workflow_id, labels={"customer": "acme"})
    assert await listed(mallory, **{"label.customer": "acme"}) == []


@pytest.mark.parametrize(
    ("labels", "field", "words"),
    [
        ({f"n{i}": "v" for i in range(11)}, "labels", "FLOWDECK_MAX_RUN_LABELS"),
        ({"bad name": "v"}, "labels.bad name", "A-Z a-z 0-9"),
        ({"x" * 65: "v"}, "labels." + "x" * 65, "1-64"),
        ({"customer": "v" * 201}, "labels.customer", "FLOWDECK_MAX_LABEL_CHARS"),
        ({"customer": 7}, "labels.customer", "must be a string"),
    ],
)
async def test_labels_past_the_limits_are_a_400_naming_the_field(
    server: Server, alice: Account, labels: dict[str, Any], field: str, words: str
) -> None:
    workflow_id = await create(alice, linear(1))
    response = await alice.client.post(f"/api/workflows/{workflow_id}/runs", json={"labels": labels})
    assert response.status_code == 400, response.text
    body = response.json()
    assert body["extra"][0]["key"] == field and words in body["detail"]
    assert await listed(alice) == []  # no run started


async def test_ten_labels_are_allowed(server: Server, alice: Account) -> None:
    workflow_id = await create(alice, linear(1))
    labels = {f"n.{i}_x-y": "v" * 200 for i in range(10)}
    run_id = await start(server, alice, workflow_id, labels=labels)
    assert (await alice.client.get(f"/api/runs/{run_id}")).json()["labels"] == labels


async def test_a_label_filter_past_the_limits_is_a_400(server: Server, alice: Account) -> None:
    response = await alice.client.get("/api/runs", params={"label.bad name": "x"})
    assert response.status_code == 400 and response.json()["extra"][0]["key"] == "label.bad name"


async def test_a_webhook_sets_labels_from_its_query(server: Server, alice: Account) -> None:
    workflow_id = await create(alice, linear(1))
    response = await alice.client.post(f"/hooks/{workflow_id}?label.customer=acme&label.source=shop", json={"a": 1})
    assert response.status_code == 202, response.text
    run_id = response.json()["instanceId"]
    await server.engine.wait_for_run(run_id, 10)
    run = (await alice.client.get(f"/api/runs/{run_id}")).json()
    assert run["trigger"] == "webhook" and run["input"] == {"a": 1}
    assert run["labels"] == {"customer": "acme", "source": "shop"}
    assert await listed(alice, **{"label.source": "shop", "trigger": "webhook"}) == [run_id]

    refused = await alice.client.post(f"/hooks/{workflow_id}?label.customer={'v' * 201}", json={})
    assert refused.status_code == 400 and refused.json()["extra"][0]["key"] == "label.customer"


async def test_a_webhook_sets_labels_from_body_paths_named_in_the_workflow(server: Server, alice: Account) -> None:
    graph = linear(1)
    graph["options"] = {"webhookLabels": {"customer": "customer.id", "sku": "items.0.sku", "paid": "paid"}}
    workflow_id = await create(alice, graph)

    async def call(body: Any, query: str = "") -> Any:
        response = await alice.client.post(f"/hooks/{workflow_id}{query}", json=body)
        if response.status_code != 202:
            return response
        run_id = response.json()["instanceId"]
        await server.engine.wait_for_run(run_id, 10)
        return (await alice.client.get(f"/api/runs/{run_id}")).json()

    run = await call({"customer": {"id": "acme"}, "items": [{"sku": 42}], "paid": True})
    assert run["labels"] == {"customer": "acme", "sku": "42", "paid": "true"}
    assert await listed(alice, **{"label.customer": "acme"}) == [run["instanceId"]]
    # A path the body lacks gives no label; the query string wins over the body.
    run = await call({"customer": {"id": "acme"}}, "?label.customer=globex")
    assert run["labels"] == {"customer": "globex"}
    refused = await call({"customer": {"id": {"nested": 1}}})
    assert refused.status_code == 400 and refused.json()["extra"][0]["key"] == "body.customer.id"
    assert "options.webhookLabels.customer" in refused.json()["detail"]
    # REST starts do not read webhookLabels: their labels are given explicitly.
    plain = await start(server, alice, workflow_id, input={"customer": {"id": "acme"}})
    assert (await alice.client.get(f"/api/runs/{plain}")).json()["labels"] == {}


async def test_webhook_label_paths_are_checked_on_save(server: Server, alice: Account) -> None:
    graph = linear(1)
    graph["options"] = {"webhookLabels": {"customer": "customer..id", "bad name": "x"}}
    response = await alice.client.post("/api/workflows", json=graph)
    assert response.status_code == 400, response.text
    paths = {p.get("path") for p in response.json()["extra"]}
    assert {"options.webhookLabels.customer", "options.webhookLabels.bad name"} <= paths, paths


async def test_the_list_filters_by_caller_and_trigger(server: Server, alice: Account) -> None:
    child = definition(
        [node("start", "start"), node("work"), end()], [edge("start", "work"), edge("work", "end", "success")]
    )
    child_id = await create(alice, child)
    caller = definition(
        [node("start", "start"), node("call", "workflow", config={"workflowId": child_id}), end()],
        [edge("start", "call"), edge("call", "end", "success")],
    )
    caller_id = await create(alice, caller)
    first = await start(server, alice, caller_id)
    second = await start(server, alice, caller_id)
    children = {
        run_id: (await alice.client.get(f"/api/runs/{run_id}")).json()["nodes"]["call"]["childInstanceId"]
        for run_id in (first, second)
    }
    assert await listed(alice, parentInstanceId=first) == [children[first]]
    assert await listed(alice, parentInstanceId=second, trigger="workflow") == [children[second]]
    assert await listed(alice, parentInstanceId=second, trigger="api") == []
    assert await listed(alice, trigger="api") == [second, first]
    bad = await alice.client.get("/api/runs", params={"parentInstanceId": "no spaces"})
    assert bad.status_code == 400


async def test_the_count_matches_the_list_and_says_more_past_its_cap(
    server: Server, alice: Account, mallory: Account, monkeypatch: pytest.MonkeyPatch
) -> None:
    workflow_id = await create(alice, linear(1))
    for customer in ("acme", "acme", "acme", "globex"):
        await start(server, alice, workflow_id, labels={"customer": customer})

    async def count(account: Account, **params: Any) -> Any:
        response = await account.client.get("/api/runs/count", params=params)
        assert response.status_code == 200, response.text
        return response.json()

    assert await count(alice, workflowId=workflow_id) == {"count": 4, "more": False}
    assert await count(alice, **{"label.customer": "acme", "status": "COMPLETED"}) == {"count": 3, "more": False}
    assert await count(mallory, workflowId=workflow_id) == {"count": 0, "more": False}
    # Past the cap (10,000; 2 here) the count stops walking and says so: the UI shows "2+".
    monkeypatch.setattr("flowdeck.storage.run_queries.COUNT_CAP", 2)
    monkeypatch.setattr("flowdeck.api.services.runs.COUNT_CAP", 2)
    assert await count(alice, workflowId=workflow_id) == {"count": 2, "more": True}
    assert await count(alice, **{"label.customer": "globex"}) == {"count": 1, "more": False}
    bad = await alice.client.get("/api/runs/count", params={"from": 10, "to": 5})
    assert bad.status_code == 400 and "from" in bad.text
