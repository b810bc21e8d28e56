"""The ``switch`` and ``set`` nodes over HTTP: a bad case is a 400 naming its path; a saved one runs."""

from __future__ import annotations

import pytest

from tests.api.conftest import Account, Server
from tests.support.graphs import definition, edge, end, node

pytestmark = pytest.mark.asyncio(loop_scope="module")


def routed(cases: list[dict]) -> dict:
    return definition(
        [
            node("start", "start"),
            node("route", "switch", config={"value": "{{ ctx.input.kind }}", "cases": cases}),
            node("shape", "set", config={"fields": [{"name": "order.kind", "value": "{{ ctx.route.value }}"}]}),
            end(params={"route": "{{ ctx.route.handle }}"}, joinMode="any"),
        ],
        [
            edge("start", "route"),
            edge("route", "shape", "vip"),
            edge("route", "end", "default"),
            edge("shape", "end", "success"),
        ],
    )


async def test_a_bad_regex_is_a_400_naming_the_case(alice: Account) -> None:
    bad = routed([{"handle": "vip", "matches": "(a+)+"}, {"handle": "other", "matches": "["}])
    response = await alice.client.post("/api/workflows", json=bad)
    assert response.status_code == 400
    named = {(p["nodeId"], p["path"]) for p in response.json()["extra"]}
    assert {("route", "config.cases[0].matches"), ("route", "config.cases[1].matches")} <= named


async def test_a_saved_switch_routes_and_the_set_node_shapes(server: Server, alice: Account) -> None:
    created = await alice.client.post("/api/workflows", json=routed([{"handle": "vip", "in": ["gold", "vip"]}]))
    assert created.status_code == 201, created.text
    workflow_id = created.json()["id"]
    for kind, handle, shape in (("vip", "vip", {"order": {"kind": "vip"}}), ("x", "default", None)):
        started = await alice.client.post(f"/api/workflows/{workflow_id}/runs", json={"input": {"kind": kind}})
        run_id = started.json()["instanceId"]
        await server.engine.wait_for_run(run_id, 10)
        run = (await alice.client.get(f"/api/runs/{run_id}")).json()
        assert run["status"] == "COMPLETED" and run["output"] == {"route": handle}
        assert run["nodes"]["shape"]["status"] == ("COMPLETED" if shape else "SKIPPED")
        assert run["nodes"]["shape"]["output"] == shape


async def test_a_case_expression_previews_with_the_switch_value_bound(alice: Account) -> None:
    context = {"input": {"kind": 12, "limit": 10}}
    body = {"expression": "value > ctx.input.limit", "context": context, "switchValue": "{{ ctx.input.kind }}"}
    answer = await alice.client.post("/api/templates/preview", json=body)
    assert answer.status_code == 200 and answer.json() == {"value": True}
    unbound = await alice.client.post("/api/templates/preview", json={**body, "switchValue": None})
    assert unbound.status_code == 400 and "'value' is undefined" in unbound.json()["detail"]
