"""When a run goes wrong, in the browser (issue 14): "Retry failed" offers the original or the latest
version, "Debug in editor" loads the run's input too, and a run failing inside a loop leaves nothing
running on the canvas."""

from __future__ import annotations

import time
from typing import Any

from graphs import chain, edge, node
from pages.editor_page import EditorPage
from playwright.sync_api import Page, expect

from conftest import Server, shot


def _wait_for(server: Server, run_id: str, status: str) -> dict[str, Any]:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        run: dict[str, Any] = server.api("GET", f"/api/runs/{run_id}")
        if run["status"] == status:
            return run
        time.sleep(0.1)
    raise AssertionError(f"run {run_id} never became {status}")


def _buggy(fixed: bool) -> dict[str, Any]:
    definition = chain(
        "Needs a fix",
        ("calc", "return {'v': 1}"),
        ("boom", "return {'ok': True}" if fixed else "raise ValueError('bug in v1')"),
        end_params={"ok": "{{ ctx.boom.ok }}"},
    )
    definition["nodes"][2]["retry"] = {"maxAttempts": 1}
    return definition


def test_retry_failed_offers_the_original_or_the_latest_version(page: Page, server: Server) -> None:
    wf = server.create_workflow(_buggy(fixed=False))
    run_id = server.api("POST", f"/api/workflows/{wf['id']}/runs", {"input": {}})["instanceId"]
    _wait_for(server, run_id, "FAILED")
    server.api("PUT", f"/api/workflows/{wf['id']}", {**_buggy(fixed=True), "version": 1})

    page.goto(f"/runs/{run_id}")
    expect(page.get_by_test_id("run-detail")).to_have_attribute("data-status", "FAILED")
    page.get_by_test_id("run-retry").click()
    expect(page.get_by_test_id("run-retry-original")).to_contain_text("v1")
    expect(page.get_by_test_id("run-retry-latest")).to_be_visible()
    shot(page, "run-retry-choice")
    page.get_by_test_id("run-retry-latest").click()

    expect(page.get_by_test_id("run-detail")).to_have_attribute("data-status", "COMPLETED", timeout=20_000)
    expect(page.locator(".run-meta")).to_contain_text("v2")
    expect(page.locator(".run-meta")).to_contain_text("failed, retried once")
    # its failed attempt stays on its page (the timeline) and in the list
    boom_bars = page.locator('[data-testid="timeline-row"][data-node-id="boom"] .gantt__bar')
    expect(boom_bars).to_have_count(2)
    expect(boom_bars.first).to_have_attribute("data-status", "FAILED")
    page.goto(f"/runs?workflowId={wf['id']}")
    row = page.locator(f'[data-testid="run-row"][data-id="{run_id}"]')
    expect(row).to_have_attribute("data-status", "COMPLETED")
    expect(row.get_by_test_id("run-retried")).to_have_text("failed · retried")
    run = server.api("GET", f"/api/runs/{run_id}")
    assert run["version"] == 2 and run["output"] == {"ok": True}
    assert run["nodes"]["calc"]["attempt"] == 1  # kept from the first try


def test_retry_with_the_original_version_fails_again(page: Page, server: Server) -> None:
    wf = server.create_workflow(_buggy(fixed=False))
    run_id = server.api("POST", f"/api/workflows/{wf['id']}/runs", {"input": {}})["instanceId"]
    _wait_for(server, run_id, "FAILED")
    page.goto(f"/runs/{run_id}")
    page.get_by_test_id("run-retry").click()
    page.get_by_test_id("run-retry-original").click()
    expect(page.locator(".run-meta")).to_contain_text("retried once", timeout=20_000)
    expect(page.get_by_test_id("run-detail")).to_have_attribute("data-status", "FAILED")
    page.locator('.react-flow__node[data-id="boom"]').click()
    page.get_by_test_id("tab-run-data").click()
    expect(page.get_by_test_id("run-data-attempts")).to_have_text("attempt 1 of 1, retry 1")  # never "2/1"


def test_debug_in_editor_loads_the_run_input_as_the_test_input(page: Page, server: Server) -> None:
    wf = server.create_workflow(chain("Echo", ("count", "return {'n': len(ctx['input']['items'])}")))
    run_id = server.api("POST", f"/api/workflows/{wf['id']}/runs", {"input": {"items": [1, 2, 3]}})["instanceId"]
    _wait_for(server, run_id, "COMPLETED")
    page.goto(f"/runs/{run_id}")
    page.get_by_test_id("debug-in-editor").click()
    expect(page.locator('.react-flow__node[data-id="count"] [data-testid="pin-badge"]')).to_be_visible()
    EditorPage(page)
    page.get_by_test_id("bottom-tab-input").click()
    expect(page.get_by_test_id("test-input").locator(".cm-content")).to_contain_text('"items"')
    expect(page.get_by_test_id("test-input").locator(".cm-content")).to_contain_text("3")


def test_a_run_failing_inside_a_loop_shows_the_loop_cancelled(page: Page, server: Server) -> None:
    definition = {
        "title": "Loop fails",
        "nodes": [
            node("start", "start", 0),
            node("each", "loop", 280, config={"items": [1, 2, 3]}),
            node("work", "python", 560, y=160, config={"code": "raise ValueError('item failed')"}),
            node("end", "end", 560, config={"outputParameters": {}}),
        ],
        "edges": [edge("start", "each"), edge("each", "work", "loop"), edge("each", "end", "done")],
    }
    definition["nodes"][2]["retry"] = {"maxAttempts": 1}
    wf = server.create_workflow(definition)
    run_id = server.api("POST", f"/api/workflows/{wf['id']}/runs", {"input": {}})["instanceId"]
    _wait_for(server, run_id, "FAILED")
    page.goto(f"/runs/{run_id}")
    expect(page.get_by_test_id("run-detail")).to_have_attribute("data-status", "FAILED")
    expect(page.locator('.react-flow__node[data-id="each"] [data-testid="flow-node"]')).to_have_attribute(
        "data-status", "CANCELLED"
    )
    page.get_by_test_id("tab-events").click()
    expect(page.get_by_test_id("event-row").filter(has_text="NODE_CANCELLED")).to_have_count(1)
