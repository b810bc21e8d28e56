"""Widgets over HTTP (docs/widgets.md): CRUD, every type replayed from real runs, sync runs, embed tokens and pages."""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

import httpx
import pytest
import socketio
import sqlalchemy as sa

from flowdeck.storage.widget_tables import embed_tokens
from tests.api.conftest import Account, Server
from tests.support.graphs import definition, edge, end, node

pytestmark = pytest.mark.asyncio(loop_scope="module")

TABLE = {
    "rowsPath": "report.orders",
    "columns": [{"path": "id"}, {"path": "price", "label": "Price", "format": "currency"}],
}


def echo() -> dict[str, Any]:
    """start -> end: the run's output is ``{"report": <the run input>}``."""
    return definition([node("start", "start"), end(params={"report": "{{ ctx.input }}"})], [edge("start", "end")])


def slow_echo() -> dict[str, Any]:
    """start -> nap (sleeps input.sleep seconds) -> end, output ``{"report": <input>}``."""
    nodes = [
        node("start", "start"),
        node("nap", config={"sleep": "{{ ctx.input.sleep }}"}),
        end(params={"report": "{{ ctx.input }}"}),
    ]
    return definition(nodes, [edge("start", "nap"), edge("nap", "end")])


async def workflow(account: Account, graph: dict[str, Any] | None = None) -> str:
    response = await account.client.post("/api/workflows", json=graph or echo())
    assert response.status_code == 201, response.text
    return str(response.json()["id"])


async def run(server: Server, account: Account, workflow_id: str, report: Any) -> str:
    started = await account.client.post(f"/api/workflows/{workflow_id}/runs", json={"input": report})
    run_id = str(started.json()["instanceId"])
    await server.engine.wait_for_run(run_id, 10)
    return run_id


async def widget(account: Account, workflow_id: str, widget_type: str, config: dict[str, Any], **fields: Any) -> str:
    body = {"workflowId": workflow_id, "name": f"a {widget_type}", "type": widget_type, "config": config, **fields}
    response = await account.client.post("/api/widgets", json=body)
    assert response.status_code == 201, response.text
    return str(response.json()["id"])


async def data(account: Account, widget_id: str, **params: Any) -> dict[str, Any]:
    response = await account.client.get(f"/api/widgets/{widget_id}/data", params=params)
    assert response.status_code == 200, response.text
    answer: dict[str, Any] = response.json()
    return answer


async def embed_token(account: Account, widget_id: str, **body: Any) -> dict[str, Any]:
    response = await account.client.post(f"/api/widgets/{widget_id}/embed-tokens", json=body)
    assert response.status_code == 201, response.text
    created: dict[str, Any] = response.json()
    return created


# -- CRUD ---------------------------------------------------------------------------------------------
async def test_widgets_are_created_read_listed_saved_and_deleted(alice: Account) -> None:
    first, second = await workflow(alice), await workflow(alice)
    created = await alice.client.post(
        "/api/widgets",
        json={"workflowId": first, "name": "Orders", "type": "table", "config": TABLE},
    )
    assert created.status_code == 201
    body = created.json()
    assert body["mode"] == "replay" and body["frameAncestors"] is None and body["config"] == TABLE
    widget_id = body["id"]
    others = [await widget(alice, second, "json", {}) for _ in range(2)]

    assert (await alice.client.get(f"/api/widgets/{widget_id}")).json() == body
    page = (await alice.client.get("/api/widgets", params={"limit": 2})).json()
    rest = (await alice.client.get("/api/widgets", params={"limit": 2, "cursor": page["nextCursor"]})).json()
    assert [w["id"] for w in page["items"] + rest["items"]] == [*others[::-1], widget_id]
    assert rest["nextCursor"] is None
    by_workflow = (await alice.client.get("/api/widgets", params={"workflowId": second})).json()["items"]
    assert {w["id"] for w in by_workflow} == set(others)

    saved = await alice.client.put(
        f"/api/widgets/{widget_id}",
        json={**body, "name": "Renamed", "type": "metric", "config": {"valuePath": "n", "label": "N"}},
    )
    assert saved.status_code == 200, saved.text
    assert saved.json()["name"] == "Renamed" and saved.json()["type"] == "metric"
    assert saved.json()["updatedAt"] >= body["updatedAt"]

    assert (await alice.client.delete(f"/api/widgets/{widget_id}")).status_code == 204
    assert (await alice.client.get(f"/api/widgets/{widget_id}")).status_code == 404
    assert (await alice.client.delete(f"/api/widgets/{widget_id}")).status_code == 404


@pytest.mark.parametrize(
    ("fields", "field"),
    [
        ({"type": "table", "config": {"columns": [{"path": "id", "width": 3}]}}, "config.columns[0].width"),
        ({"type": "table", "config": {"columns": []}}, "config.columns"),
        ({"type": "table", "config": {"columns": [{"path": "a"}], "sort": {"column": 1}}}, "config.sort.column"),
        ({"type": "table", "config": {"columns": [{"path": "a..b"}]}}, "config.columns[0].path"),
        ({"type": "table", "config": {"columns": [{"path": "a"}], "pageSize": 0}}, "config.pageSize"),
        (
            {
                "type": "chart",
                "config": {"chartType": "pie", "labelPath": "x", "series": [{"path": "a"}, {"path": "b"}]},
            },
            "config.series",
        ),
        ({"type": "metric", "config": {"label": "N"}}, "config.valuePath"),
        ({"type": "json", "config": {"waitSeconds": 3}}, "config.waitSeconds"),
        ({"type": "json", "mode": "sync", "config": {"waitSeconds": 31}}, "config.waitSeconds"),
        ({"type": "json", "config": {}, "frameAncestors": ["https://ok.test", "javascript:x"]}, "frameAncestors[1]"),
        ({"type": "json", "config": {}, "frameAncestors": ["https://a.test; script-src *"]}, "frameAncestors[0]"),
    ],
)
async def test_a_bad_config_is_a_400_naming_the_field(alice: Account, fields: dict[str, Any], field: str) -> None:
    workflow_id = await workflow(alice)
    response = await alice.client.post("/api/widgets", json={"workflowId": workflow_id, "name": "bad", **fields})
    assert response.status_code == 400, response.text
    assert field in response.json()["detail"]
    assert response.json()["extra"][0]["key"] == field
    assert (await alice.client.get("/api/widgets")).json()["items"] == []


async def test_another_tenants_widget_or_workflow_is_a_404(alice: Account, mallory: Account) -> None:
    workflow_id = await workflow(alice)
    widget_id = await widget(alice, workflow_id, "json", {})
    token_id = (await embed_token(alice, widget_id))["id"]

    stolen = await mallory.client.post(
        "/api/widgets", json={"workflowId": workflow_id, "name": "x", "type": "json", "config": {}}
    )
    assert stolen.status_code == 404 and "workflowId" in stolen.json()["detail"]
    for method, path in [
        ("GET", f"/api/widgets/{widget_id}"),
        ("GET", f"/api/widgets/{widget_id}/data"),
        ("DELETE", f"/api/widgets/{widget_id}"),
        ("GET", f"/api/widgets/{widget_id}/embed-tokens"),
        ("POST", f"/api/widgets/{widget_id}/embed-tokens"),
        ("DELETE", f"/api/widgets/{widget_id}/embed-tokens/{token_id}"),
    ]:
        assert (await mallory.client.request(method, path)).status_code == 404, (method, path)
    assert (await mallory.client.get("/api/widgets")).json()["items"] == []
    mallorys = await workflow(mallory)
    moved = await alice.client.put(
        f"/api/widgets/{widget_id}", json={"workflowId": mallorys, "name": "x", "type": "json", "config": {}}
    )
    assert moved.status_code == 404 and "workflowId" in moved.json()["detail"]
    assert (await alice.client.get(f"/api/widgets/{widget_id}")).json()["workflowId"] == workflow_id


# -- replay, every type ---------------------------------------------------------------------------------
async def test_a_replay_table_shows_the_latest_completed_production_run(server: Server, alice: Account) -> None:
    workflow_id = await workflow(alice)
    widget_id = await widget(alice, workflow_id, "table", {**TABLE, "sort": {"column": 1, "direction": "desc"}})
    empty = await data(alice, widget_id)
    assert empty["status"] == "empty" and empty["data"] is None and "COMPLETED" in empty["error"]["message"]

    await run(server, alice, workflow_id, {"orders": [{"id": 1, "price": 9.5}]})
    latest = await run(server, alice, workflow_id, {"orders": [{"id": 2, "price": 3}, {"id": 3, "price": None}]})
    test_run = (await alice.client.post("/api/test-runs", json={**echo(), "input": {"orders": []}})).json()
    await server.engine.wait_for_run(test_run["instanceId"], 10)

    answer = await data(alice, widget_id)
    assert answer["status"] == "ready" and answer["mode"] == "replay" and answer["error"] is None
    assert answer["widgetId"] == widget_id and answer["runId"] == latest and answer["runStatus"] == "COMPLETED"
    assert answer["data"] == {
        "columns": [
            {"key": "c0", "label": "id", "format": "text", "currency": None},
            {"key": "c1", "label": "Price", "format": "currency", "currency": None},
        ],
        "rows": [{"c0": 2, "c1": 3}, {"c0": 3, "c1": None}],
        "total": 2,
        "pageSize": 25,
        "sort": {"column": 1, "direction": "desc"},
        "truncated": False,
    }


async def test_chart_text_and_json_widgets_replay_the_output(server: Server, alice: Account) -> None:
    workflow_id = await workflow(alice)
    chart = await widget(
        alice,
        workflow_id,
        "chart",
        {
            "chartType": "bar",
            "rowsPath": "report.days",
            "labelPath": "day",
            "series": [{"path": "n", "label": "Orders"}, {"path": "m"}],
        },
    )
    text = await widget(alice, workflow_id, "text", {"path": "report.notes"})
    whole = await widget(alice, workflow_id, "json", {"path": "report.days.1", "expandDepth": 4})
    markdown = "# Hi <script>alert(1)</script>\n\n[ok](https://example.com) [bad](javascript:alert(1))"
    await run(
        server,
        alice,
        workflow_id,
        {"days": [{"day": "Mon", "n": 3, "m": 1.5}, {"day": "Tue", "n": 5, "m": None}], "notes": markdown},
    )

    charted = await data(alice, chart)
    assert charted["status"] == "ready"
    assert charted["data"] == {
        "chartType": "bar",
        "labels": ["Mon", "Tue"],
        "series": [{"label": "Orders", "values": [3, 5]}, {"label": "m", "values": [1.5, None]}],
    }
    html = (await data(alice, text))["data"]["html"]
    assert "<h1>Hi &lt;script&gt;" in html and "<script>" not in html
    assert '<a href="https://example.com"' in html and 'href="javascript' not in html
    assert (await data(alice, whole))["data"] == {"value": {"day": "Tue", "n": 5, "m": None}, "expandDepth": 4}


async def test_a_metric_compares_with_the_previous_completed_production_run(server: Server, alice: Account) -> None:
    workflow_id = await workflow(alice)
    metric = await widget(
        alice, workflow_id, "metric", {"valuePath": "report.total", "label": "Revenue", "unit": "EUR"}
    )
    await run(server, alice, workflow_id, {"total": 80})
    first = (await data(alice, metric))["data"]
    assert first == {
        "label": "Revenue",
        "value": 80,
        "format": "number",
        "currency": None,
        "unit": "EUR",
        "previous": None,
        "change": None,
        "changePercent": None,
    }
    await run(server, alice, workflow_id, {"total": 100})
    second = (await data(alice, metric))["data"]
    assert (second["value"], second["previous"], second["change"], second["changePercent"]) == (100, 80, 20, 25.0)


@pytest.mark.parametrize(
    ("widget_type", "config", "report", "field", "words"),
    [
        (
            "table",
            TABLE,
            {"orders": [{"id": 1, "price": 2}, {"id": 2, "name": "x"}]},
            "config.columns[1].path",
            ['"price" is missing in row 1', "keys: id, name"],
        ),
        (
            "table",
            TABLE,
            {"orders": [{"id": 1, "price": "cheap"}]},
            "config.columns[1].path",
            ["is a string", "expected a number"],
        ),
        ("table", TABLE, {"orders": {"id": 1}}, "config.rowsPath", ['"report.orders" is an object', "expected a list"]),
        (
            "chart",
            {"chartType": "line", "rowsPath": "report", "labelPath": "d", "series": [{"path": "v"}]},
            [{"d": "x", "v": "1"}],
            "config.series[0].path",
            ["is a string"],
        ),
        (
            "metric",
            {"valuePath": "report.sum.total", "label": "t"},
            {"sum": {"count": 1}},
            "config.valuePath",
            ['"report.sum.total" is missing', 'keys of "report.sum": count'],
        ),
        (
            "metric",
            {"valuePath": "report.total", "label": "t"},
            {"total": True},
            "config.valuePath",
            ["is a boolean in the output, expected a number"],
        ),
        ("text", {"path": "report.notes"}, {"notes": 3}, "config.path", ["is a number", "Markdown"]),
        (
            "json",
            {"path": "report.a.3"},
            {"a": [1]},
            "config.path",
            ['"report.a.3" is missing', '"report.a" is a list of 1'],
        ),
    ],
)
async def test_a_path_that_does_not_resolve_is_an_error_naming_the_field(
    server: Server, alice: Account, widget_type: str, config: dict[str, Any], report: Any, field: str, words: list[str]
) -> None:
    workflow_id = await workflow(alice)
    widget_id = await widget(alice, workflow_id, widget_type, config)
    run_id = await run(server, alice, workflow_id, report)
    answer = await data(alice, widget_id)
    assert answer["status"] == "error" and answer["data"] is None and answer["runId"] == run_id
    path = config.get("rowsPath") if field == "config.rowsPath" else None
    assert answer["error"]["field"] == field, (answer, path)
    for word in words:
        assert word in answer["error"]["message"], answer["error"]["message"]
    assert answer["error"]["message"].startswith(field)


# -- a run, seen through an unsaved config (the builder's preview) -------------------------------------
async def test_any_run_of_the_tenant_can_be_shown_with_an_unsaved_config(
    server: Server, alice: Account, mallory: Account
) -> None:
    started = await alice.client.post("/api/test-runs", json={**echo(), "input": {"orders": [{"id": 7, "price": 1}]}})
    run_id = started.json()["instanceId"]
    await server.engine.wait_for_run(run_id, 10)

    url = f"/api/runs/{run_id}/widget"
    shown = await alice.client.get(url, params={"type": "table", "config": json.dumps(TABLE)})
    assert shown.status_code == 200, shown.text
    answer = shown.json()
    assert answer["mode"] == "run" and answer["widgetId"] is None and answer["status"] == "ready"
    assert answer["data"]["rows"] == [{"c0": 7, "c1": 1}]

    broken = await alice.client.get(url, params={"type": "table", "config": "{not json"})
    assert broken.status_code == 400 and broken.json()["extra"][0] == {
        "key": "config",
        "source": "query",
        "message": broken.json()["extra"][0]["message"],
    }
    unknown = await alice.client.get(url, params={"type": "table", "config": json.dumps({**TABLE, "colour": 1})})
    assert unknown.status_code == 400 and unknown.json()["extra"][0]["key"] == "config.colour"
    assert (await alice.client.get(url, params={"type": "gauge", "config": "{}"})).status_code == 400
    hidden = await mallory.client.get(url, params={"type": "table", "config": json.dumps(TABLE)})
    assert hidden.status_code == 404


# -- sync -------------------------------------------------------------------------------------------------
SYNC = {
    "path": "",
    "waitSeconds": 5,
    "inputs": [
        {"param": "region", "field": "region", "required": True},
        {"param": "n", "field": "count", "type": "number", "default": 1},
        {"param": "deep", "field": "deep", "type": "boolean"},
        {"param": "sleep", "field": "sleep", "type": "number", "default": 0},
    ],
}


async def test_a_sync_widget_runs_the_workflow_with_the_query_as_input(server: Server, alice: Account) -> None:
    workflow_id = await workflow(alice, slow_echo())
    widget_id = await widget(alice, workflow_id, "json", SYNC, mode="sync")

    answer = await data(alice, widget_id, region="eu", deep="true")
    assert answer["status"] == "ready" and answer["mode"] == "sync" and answer["runStatus"] == "COMPLETED"
    assert answer["data"]["value"] == {"report": {"region": "eu", "count": 1, "deep": True, "sleep": 0}}
    listed = (await alice.client.get("/api/runs", params={"workflowId": workflow_id})).json()["items"]
    assert [(r["instanceId"], r["trigger"], r["isTest"]) for r in listed] == [(answer["runId"], "widget", False)]

    for params, key in [
        ({}, "region"),
        ({"region": "eu", "n": "many"}, "n"),
        ({"region": "eu", "color": "red"}, "color"),
    ]:
        refused = await alice.client.get(f"/api/widgets/{widget_id}/data", params=params)
        assert refused.status_code == 400, params
        assert refused.json()["extra"][0] == {
            "key": key,
            "source": "query",
            "message": refused.json()["extra"][0]["message"],
        }
    assert len((await alice.client.get("/api/runs", params={"workflowId": workflow_id})).json()["items"]) == 1


async def test_a_sync_run_past_its_wait_answers_running_and_is_read_later(server: Server, alice: Account) -> None:
    workflow_id = await workflow(alice, slow_echo())
    config = {**SYNC, "waitSeconds": 0.2}
    widget_id = await widget(alice, workflow_id, "json", config, mode="sync")
    token = (await embed_token(alice, widget_id))["token"]

    async with httpx.AsyncClient(base_url=str(alice.client.base_url)) as public:
        answer = (await public.get(f"/embed/{token}/data", params={"region": "us", "sleep": "0.6"})).json()
        assert answer["status"] == "running" and answer["runStatus"] == "RUNNING" and answer["data"] is None
        await server.engine.wait_for_run(answer["runId"], 10)
        later = (await public.get(f"/embed/{token}/runs/{answer['runId']}")).json()
    assert later["status"] == "ready" and later["runId"] == answer["runId"]
    assert later["data"]["value"]["report"]["region"] == "us"


async def test_a_failed_sync_run_is_an_error_with_the_runs_error(server: Server, alice: Account) -> None:
    broken = node("broken", config={"failTimes": 5}, retry={"maxAttempts": 1}, errorHandling="fail_workflow")
    graph = definition([node("start", "start"), broken, end()], [edge("start", "broken"), edge("broken", "end")])
    widget_id = await widget(alice, await workflow(alice, graph), "json", {"waitSeconds": 5}, mode="sync")
    answer = await data(alice, widget_id)
    assert answer["status"] == "error" and answer["runStatus"] == "FAILED"
    assert answer["error"]["field"] is None and "planned failure" in answer["error"]["message"]


# -- embed tokens and the embed page ------------------------------------------------------------------------
async def test_embed_tokens_are_created_listed_and_revoked(
    server: Server, alice: Account, anonymous: httpx.AsyncClient
) -> None:
    workflow_id = await workflow(alice)
    widget_id = await widget(
        alice, workflow_id, "json", {"path": "report"}, frameAncestors=["https://intranet.test", "'self'"]
    )
    await run(server, alice, workflow_id, {"total": 3})
    created = await embed_token(alice, widget_id, expiresInDays=2)
    token = created["token"]
    assert token.startswith("fde_") and created["url"] == f"/embed/{token}" and token.startswith(created["prefix"])
    assert 2 * 86400 - 5 < created["expiresAt"] - created["createdAt"] <= 2 * 86400
    default = await embed_token(alice, widget_id)
    assert round((default["expiresAt"] - default["createdAt"]) / 86400) == 365

    page = await anonymous.get(f"/embed/{token}")
    assert page.status_code == 200 and "text/html" in page.headers["content-type"]
    csp = page.headers["content-security-policy"]
    assert "frame-ancestors https://intranet.test 'self'" in csp and "default-src 'self'" in csp
    assert page.headers["referrer-policy"] == "no-referrer" and "x-frame-options" not in page.headers
    assert "not built" in page.text
    shown = (await anonymous.get(f"/embed/{token}/data")).json()
    assert shown["status"] == "ready" and shown["data"]["value"] == {"total": 3}

    listed = (await alice.client.get(f"/api/widgets/{widget_id}/embed-tokens")).json()["items"]
    assert [t["id"] for t in listed] == [default["id"], created["id"]]
    assert listed[1]["lastUsedAt"] is not None and listed[1]["revokedAt"] is None and "token" not in listed[1]

    assert (await alice.client.delete(f"/api/widgets/{widget_id}/embed-tokens/{created['id']}")).status_code == 204
    gone = await anonymous.get(f"/embed/{token}")
    assert gone.status_code == 410 and "revoked" in gone.text and '"total"' not in gone.text
    refused = await anonymous.get(f"/embed/{token}/data")
    assert refused.status_code == 410 and "data" not in refused.json()
    listed = (await alice.client.get(f"/api/widgets/{widget_id}/embed-tokens")).json()["items"]
    assert listed[1]["revokedAt"] is not None
    assert (await anonymous.get(f"/embed/{default['token']}/data")).status_code == 200


async def test_expired_and_unknown_tokens_show_no_data(
    server: Server, alice: Account, anonymous: httpx.AsyncClient
) -> None:
    workflow_id = await workflow(alice)
    widget_id = await widget(alice, workflow_id, "json", {})
    await run(server, alice, workflow_id, {"secret": 1})
    created = await embed_token(alice, widget_id)
    async with server.engine.db.transaction() as conn:
        await conn.execute(
            embed_tokens.update().where(embed_tokens.c.id == created["id"]).values(expires_at=time.time() - 1)
        )

    expired = await anonymous.get(f"/embed/{created['token']}")
    assert expired.status_code == 410 and "expired" in expired.text and "secret" not in expired.text
    assert (await anonymous.get(f"/embed/{created['token']}/data")).status_code == 410
    unknown = await anonymous.get("/embed/fde_nobody-has-this-token-at-all")
    assert unknown.status_code == 404 and "unknown" in unknown.text
    assert unknown.headers["content-security-policy"].endswith("frame-ancestors *")
    assert (await anonymous.get("/embed/not-a-token/data")).status_code == 404
    assert (await anonymous.get("/embed")).status_code == 404
    # An API token is no embed token, and an embed token is no API token.
    assert (await anonymous.get(f"/embed/{alice.token}/data")).status_code == 404
    fresh = (await embed_token(alice, widget_id))["token"]
    headers = {"Authorization": f"Bearer {fresh}"}
    assert (await anonymous.get(f"/api/widgets/{widget_id}", headers=headers)).status_code == 401


async def test_an_embed_token_reads_only_runs_of_its_widgets_workflow(
    server: Server, alice: Account, anonymous: httpx.AsyncClient
) -> None:
    mine, other = await workflow(alice), await workflow(alice)
    widget_id = await widget(alice, mine, "json", {})
    token = (await embed_token(alice, widget_id))["token"]
    own_run = await run(server, alice, mine, {"a": 1})
    other_run = await run(server, alice, other, {"b": 2})
    assert (await anonymous.get(f"/embed/{token}/runs/{own_run}")).json()["data"]["value"] == {"report": {"a": 1}}
    refused = await anonymous.get(f"/embed/{token}/runs/{other_run}")
    assert refused.status_code == 404 and "report" not in refused.text


async def test_deleting_the_workflow_deletes_its_widgets_and_tokens(
    server: Server, alice: Account, anonymous: httpx.AsyncClient
) -> None:
    workflow_id = await workflow(alice)
    widget_id = await widget(alice, workflow_id, "json", {})
    token = (await embed_token(alice, widget_id))["token"]
    assert (await alice.client.delete(f"/api/workflows/{workflow_id}")).status_code == 204
    assert (await alice.client.get(f"/api/widgets/{widget_id}")).status_code == 404
    assert (await anonymous.get(f"/embed/{token}")).status_code == 404
    async with server.engine.db.read() as conn:
        count = (await conn.execute(sa.select(sa.func.count()).where(embed_tokens.c.widget_id == widget_id))).scalar()
    assert count == 0


async def test_the_embed_page_is_the_built_entry_when_there_is_one(
    server: Server, alice: Account, anonymous: httpx.AsyncClient
) -> None:
    page_file = server.app.api.state.embed_page
    page_file.parent.mkdir(parents=True, exist_ok=True)
    page_file.write_text("<!doctype html><title>embed</title><div id=root></div>")
    try:
        widget_id = await widget(alice, await workflow(alice), "json", {}, name="Sales <by> region")
        token = (await embed_token(alice, widget_id))["token"]
        page = await anonymous.get(f"/embed/{token}")
        assert page.status_code == 200 and "<div id=root>" in page.text
        assert "<title>Sales &lt;by&gt; region</title>" in page.text  # titled by the widget, escaped
        assert page.headers["content-security-policy"].endswith("frame-ancestors *")
    finally:
        page_file.unlink()
    await asyncio.sleep(0)


# -- Socket.IO (what an embed connection hears: tests/api/test_embed_live.py) ----------------------------
@pytest.mark.parametrize("token", ["fde_unknown-token-value-here", "revoked"])
async def test_a_bad_embed_token_cannot_connect(server: Server, alice: Account, token: str) -> None:
    if token == "revoked":
        widget_id = await widget(alice, await workflow(alice), "json", {})
        created = await embed_token(alice, widget_id)
        await alice.client.delete(f"/api/widgets/{widget_id}/embed-tokens/{created['id']}")
        token = created["token"]
    client = socketio.AsyncClient(reconnection=False)
    with pytest.raises(socketio.exceptions.ConnectionError):
        await client.connect(server.url, auth={"embedToken": token}, transports=["websocket"])
