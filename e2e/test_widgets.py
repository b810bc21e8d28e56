"""Widgets and embedding (docs/widgets.md): embed pages in iframes of a page on another origin, live refresh
after a new production run, a revoked link, and the widget designer in the editor."""

from __future__ import annotations

import html
import re
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from graphs import chain
from playwright.sync_api import Page, expect

from conftest import Server, shot

ROWS_CODE = "rows = ctx['input']['rows']\nreturn {'rows': rows, 'total': sum(r['qty'] for r in rows)}"


def rows_workflow(server: Server, title: str) -> dict[str, Any]:
    """start -> python (rows from the input) -> end: the run output is {rows, total}."""
    return server.create_workflow(
        chain(title, ("calc", ROWS_CODE), end_params={"rows": "{{ ctx.calc.rows }}", "total": "{{ ctx.calc.total }}"})
    )


def orders(n: int) -> list[dict[str, Any]]:
    return [{"name": f"item {i}", "qty": i * 3 + 1, "price": 2.5 * i} for i in range(1, n + 1)]


def run_to_completion(server: Server, workflow_id: str, rows: list[dict[str, Any]], timeout: float = 20) -> str:
    run_id: str = server.api("POST", f"/api/workflows/{workflow_id}/runs", {"input": {"rows": rows}})["instanceId"]
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        run = server.api("GET", f"/api/runs/{run_id}")
        if run["status"] == "COMPLETED":
            return run_id
        assert run["status"] in ("PENDING", "RUNNING"), run
        time.sleep(0.2)
    raise AssertionError(f"run {run_id} did not complete in {timeout}s")


def create_widget(server: Server, workflow_id: str, name: str, widget_type: str, config: dict[str, Any]) -> str:
    body = {"workflowId": workflow_id, "name": name, "type": widget_type, "mode": "replay", "config": config}
    widget_id: str = server.api("POST", "/api/widgets", body)["id"]
    return widget_id


def embed_url(server: Server, widget_id: str) -> tuple[str, str]:
    """(token id, absolute embed URL) of a new embed token."""
    created = server.api("POST", f"/api/widgets/{widget_id}/embed-tokens", {"expiresInDays": 7})
    assert created["url"] == f"/embed/{created['token']}"
    assert created["token"].startswith("fde_")
    return created["id"], server.url + created["url"]


@contextmanager
def host_page(body: str) -> Iterator[str]:
    """Serve one HTML page from another origin (127.0.0.1 on a different port), like a customer's intranet."""
    page = f"<!doctype html><html><head><title>Intranet</title></head><body>{body}</body></html>".encode()

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(page)))
            self.end_headers()
            self.wfile.write(page)

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 (the base class's name)
            return

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}/"
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(timeout=5)


def iframe(frame_id: str, src: str) -> str:
    size = 'width="640" height="360" style="border:1px solid #ccc"'
    return f'<iframe id="{frame_id}" src="{html.escape(src)}" {size}></iframe>'


def test_embedded_widgets_render_on_another_origin_and_refresh_live(page: Page, server: Server) -> None:
    wf = rows_workflow(server, "Open orders")
    run_to_completion(server, wf["id"], orders(3))
    table = create_widget(
        server,
        wf["id"],
        "Orders table",
        "table",
        {
            "rowsPath": "rows",
            "columns": [
                {"path": "name", "label": "Item"},
                {"path": "qty", "label": "Qty", "format": "number"},
                {"path": "price", "label": "Price", "format": "currency"},
            ],
            "pageSize": 10,
        },
    )
    chart = create_widget(
        server,
        wf["id"],
        "Orders chart",
        "chart",
        {"chartType": "bar", "rowsPath": "rows", "labelPath": "name", "series": [{"path": "qty", "label": "Qty"}]},
    )
    _, table_src = embed_url(server, table)
    _, chart_src = embed_url(server, chart)
    revoked_id, revoked_src = embed_url(server, table)
    server.api("DELETE", f"/api/widgets/{table}/embed-tokens/{revoked_id}")
    fenced = server.api(
        "POST",
        "/api/widgets",
        {
            "workflowId": wf["id"],
            "name": "Intranet only",
            "type": "json",
            "config": {},
            "frameAncestors": ["https://intranet.example.com"],
        },
    )
    _, fenced_src = embed_url(server, fenced["id"])

    body = (
        iframe("table", table_src)
        + iframe("chart", chart_src)
        + iframe("revoked", revoked_src)
        + iframe("fenced", fenced_src)
    )
    with host_page(body) as outer:
        assert not outer.startswith(server.url)
        page.goto(outer)
        table_frame = page.frame_locator("#table")
        widget = table_frame.locator('[data-widget-type="table"]')
        expect(widget).to_have_attribute("data-widget-status", "ready")
        expect(table_frame.get_by_test_id("widget-row")).to_have_count(3)
        expect(widget).to_have_attribute("data-row-count", "3")
        expect(table_frame.get_by_test_id("widget-row").first).to_contain_text("item 1")
        expect(table_frame.get_by_test_id("widget-row").first).to_contain_text("$2.50")
        expect(table_frame.get_by_test_id("embed-updated")).to_contain_text("updated ")

        # sorting happens in the browser: Qty descending puts item 3 first
        qty = table_frame.get_by_test_id("widget-sort").nth(1)
        qty.click()
        qty.click()
        expect(qty).to_have_attribute("data-sort", "desc")
        expect(table_frame.get_by_test_id("widget-row").first).to_contain_text("item 3")

        chart_frame = page.frame_locator("#chart")
        chart_widget = chart_frame.locator('[data-widget-type="chart"]')
        expect(chart_widget).to_have_attribute("data-widget-status", "ready")
        expect(chart_widget).to_have_attribute("data-point-count", "3")
        expect(chart_widget).to_have_attribute("data-series-count", "1")
        expect(chart_frame.locator("canvas")).to_be_visible()

        revoked_frame = page.frame_locator("#revoked")
        expect(revoked_frame.locator("body")).to_contain_text("revoked")
        expect(revoked_frame.locator("[data-widget-type]")).to_have_count(0)
        # frame-ancestors: only intranet.example.com may frame that one, so the browser shows nothing of it
        fenced_frame = page.locator("#fenced").element_handle().content_frame()
        assert fenced_frame is not None
        fenced_frame.wait_for_load_state()
        assert fenced_frame.url.startswith("chrome-error://"), fenced_frame.url
        expect(page.frame_locator("#fenced").locator("[data-widget-type]")).to_have_count(0)
        shot(page, "widgets-embedded")

        # a new production run with other rows: the embedded table follows without reloading the outer page
        expect(table_frame.get_by_test_id("embed")).to_have_attribute("data-live", "joined")
        expect(chart_frame.get_by_test_id("embed")).to_have_attribute("data-live", "joined")
        page.evaluate("window.__sameDocument = true")
        run_to_completion(server, wf["id"], orders(5))
        expect(table_frame.get_by_test_id("widget-row")).to_have_count(5, timeout=15_000)
        expect(chart_widget).to_have_attribute("data-point-count", "5", timeout=15_000)
        assert page.evaluate("window.__sameDocument") is True
        shot(page, "widgets-embedded-refreshed")


def test_revoking_an_open_embed_link_takes_the_widget_off_the_page(page: Page, server: Server) -> None:
    wf = rows_workflow(server, "Revoked while open")
    run_to_completion(server, wf["id"], orders(2))
    widget = create_widget(
        server, wf["id"], "Soon revoked", "table", {"rowsPath": "rows", "columns": [{"path": "name"}]}
    )
    token_id, src = embed_url(server, widget)
    page.goto(src)
    expect(page.locator("[data-widget-type='table']")).to_have_attribute("data-widget-status", "ready")
    expect(page.get_by_test_id("embed")).to_have_attribute("data-live", "joined")
    expect(page).to_have_title("Soon revoked")  # the embed is titled by its widget
    expect(page.get_by_test_id("embed-title")).to_have_text("Soon revoked")

    # the server closes the page's connection at once, and the page shows why (well before its 60 s poll)
    server.api("DELETE", f"/api/widgets/{widget}/embed-tokens/{token_id}")
    expect(page.get_by_test_id("embed-error")).to_have_attribute("data-status", "410", timeout=10_000)
    expect(page.locator("[data-widget-type]")).to_have_count(0)


def test_a_broken_path_shows_the_field_on_the_embedded_widget(page: Page, server: Server) -> None:
    wf = rows_workflow(server, "Broken widget")
    run_to_completion(server, wf["id"], orders(2))
    widget = create_widget(
        server, wf["id"], "Broken", "table", {"rowsPath": "rows", "columns": [{"path": "name"}, {"path": "nope"}]}
    )
    _, src = embed_url(server, widget)
    problems: list[str] = []
    page.on("console", lambda msg: problems.append(msg.text) if msg.type == "error" else None)
    page.goto(src)
    root = page.locator("[data-widget-type='table']")
    expect(root).to_have_attribute("data-widget-status", "error")
    expect(page.get_by_test_id("widget-error-field")).to_have_text("config.columns[1].path")
    expect(page.get_by_test_id("widget-error-message")).to_contain_text("nope")
    expect(page.get_by_test_id("embed")).to_have_attribute("data-live", "joined")
    # the page lives with its strict Content-Security-Policy (a favicon 404 is not a problem)
    assert [p for p in problems if "favicon" not in p] == []


def test_designer_creates_a_widget_with_suggested_paths_and_an_embed_link(page: Page, server: Server) -> None:
    wf = rows_workflow(server, "Designer")
    run_to_completion(server, wf["id"], orders(4))

    # from the editor's toolbar to the designer
    page.goto(f"/workflows/{wf['id']}")
    page.get_by_test_id("widgets-link").click()
    expect(page).to_have_url(f"{server.url}/workflows/{wf['id']}/widgets")
    expect(page.get_by_test_id("widget-designer")).to_be_visible()

    page.get_by_test_id("widget-new").click()
    page.get_by_test_id("widget-name").fill("Top items")
    # the rows list was found in the run's output
    expect(page.get_by_test_id("cfg-rows-path")).to_have_value("rows")

    # map the column from the paths suggested by the run's rows
    page.get_by_test_id("cfg-column-path-0").click()
    suggestions = page.get_by_test_id("path-suggestion")
    expect(suggestions.filter(has_text="qty")).to_have_count(1)
    page.locator('[data-testid="path-suggestion"][data-path="name"]').click()
    expect(page.get_by_test_id("cfg-column-path-0")).to_have_value("name")
    page.get_by_test_id("cfg-add-column").click()
    page.get_by_test_id("cfg-column-path-1").fill("q")
    page.locator('[data-testid="path-suggestion"][data-path="qty"]').click()
    page.get_by_test_id("cfg-column-format-1").select_option("number")

    preview = page.get_by_test_id("preview-widget")
    expect(preview).to_have_attribute("data-widget-status", "ready")
    expect(preview.get_by_test_id("widget-row")).to_have_count(4)
    expect(preview.locator("th").nth(1)).to_contain_text("qty")

    # a path that does not exist: the preview names the field
    page.get_by_test_id("cfg-column-label-1").fill("Quantity")
    page.get_by_test_id("cfg-column-path-1").fill("qtx")
    expect(preview).to_have_attribute("data-widget-status", "error")
    expect(preview.get_by_test_id("widget-error-field")).to_have_text("config.columns[1].path")
    page.get_by_test_id("cfg-column-path-1").fill("qty")
    expect(preview).to_have_attribute("data-widget-status", "ready")
    expect(preview.locator("th").nth(1)).to_contain_text("Quantity")

    page.get_by_test_id("widget-save").click()
    item = page.get_by_test_id("widget-item").filter(has_text="Top items")
    expect(item).to_have_count(1)
    expect(page.get_by_test_id("preview-widget")).to_have_attribute("data-widget-status", "ready")
    saved = server.api("GET", f"/api/widgets?workflowId={wf['id']}")["items"]
    assert [w["name"] for w in saved] == ["Top items"]
    assert saved[0]["config"]["columns"] == [
        {"path": "name", "format": "text"},
        {"path": "qty", "label": "Quantity", "format": "number"},
    ]

    page.get_by_test_id("embed-create").click()
    snippet = page.get_by_test_id("embed-snippet")
    expect(snippet).to_have_value(re.compile("^" + re.escape(f'<iframe src="{server.url}/embed/fde_')))
    expect(page.get_by_test_id("embed-token")).to_have_count(1)
    shot(page, "widgets-designer")

    # the link works
    url = page.get_by_test_id("embed-url").input_value()
    page.goto(url)
    expect(page.locator("[data-widget-type='table']")).to_have_attribute("data-widget-status", "ready")
    expect(page.get_by_test_id("widget-row")).to_have_count(4)


def test_sync_widget_runs_with_query_inputs_and_follows_the_run(page: Page, server: Server) -> None:
    code = "n = ctx['input']['n']\nreturn {'rows': [{'name': 'row ' + str(i), 'qty': i} for i in range(n)]}"
    definition = chain("Sync rows", ("calc", code), end_params={"rows": "{{ ctx.calc.rows }}"})
    definition["nodes"].insert(1, {**definition["nodes"][1], "id": "wait", "type": "delay", "config": {"seconds": 1}})
    definition["edges"] = [
        {"id": "e1", "source": "start", "target": "wait", "sourceHandle": "default"},
        {"id": "e2", "source": "wait", "target": "calc", "sourceHandle": "default"},
        {"id": "e3", "source": "calc", "target": "end", "sourceHandle": "success"},
    ]
    wf = server.create_workflow(definition)
    body = {
        "workflowId": wf["id"],
        "name": "Rows on demand",
        "type": "table",
        "mode": "sync",
        "config": {
            "rowsPath": "rows",
            "columns": [{"path": "name"}, {"path": "qty", "format": "number"}],
            "waitSeconds": 0,
            "inputs": [{"param": "n", "field": "n", "type": "number", "required": True}],
        },
    }
    widget = server.api("POST", "/api/widgets", body)
    _, src = embed_url(server, widget["id"])

    # the run does not finish within waitSeconds: the page shows "running", follows it, then shows its rows
    page.goto(src + "?n=4")
    root = page.locator("[data-widget-type='table']")
    expect(root).to_have_attribute("data-widget-status", "running")
    expect(page.get_by_test_id("widget-message")).to_contain_text("Running")
    expect(root).to_have_attribute("data-widget-status", "ready", timeout=15_000)
    expect(page.get_by_test_id("widget-row")).to_have_count(4)

    # a missing required input is a 400 naming the parameter, shown on the page
    page.goto(src)
    expect(page.get_by_test_id("embed-error")).to_contain_text("n")
