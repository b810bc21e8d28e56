"""Test runs (live statuses, failures with retries, stop, pins, test from here), save conflicts,
production runs (execute), run history and run detail with timeline and event log."""

from __future__ import annotations

from graphs import ORDER_TRIAGE, chain, edge, node
from pages.editor_page import EditorPage
from playwright.sync_api import Page, expect

from conftest import Server, shot


def test_live_statuses_retry_and_failure_are_shown(page: Page, server: Server) -> None:
    definition = chain("Flaky", ("boom", "raise ValueError('no luck')"))
    definition["nodes"][1]["retry"] = {"maxAttempts": 2, "backoffSeconds": 0.2, "maxBackoffSeconds": 1}
    definition["nodes"][1]["errorHandling"] = "fail_workflow"
    wf = server.create_workflow(definition)
    editor = EditorPage(page).open(wf["id"])
    editor.test_run()
    editor.expect_run_status("FAILED")
    editor.expect_status("boom", "FAILED")
    expect(editor.node_card("boom").get_by_test_id("node-status")).to_contain_text("no luck")
    expect(page.get_by_test_id("run-node-boom")).to_contain_text("2")
    # never reached: the run ended first, so it is CANCELLED (SPEC §2), in the run table too
    expect(editor.node_card("end")).to_have_attribute("data-status", "CANCELLED")
    expect(page.get_by_test_id("run-node-attempt-end")).to_have_text("not started")
    expect(page.get_by_test_id("run-node-attempt-boom")).to_have_text("attempt 2 of 2")
    editor.select("boom")
    page.get_by_test_id("tab-run-data").click()
    expect(page.get_by_test_id("run-data-attempts")).to_have_text("attempt 2 of 2")
    expect(page.get_by_test_id("run-data-error")).to_contain_text("no luck")
    shot(page, "editor-failed-run")


def test_stop_a_running_test_run(page: Page, server: Server) -> None:
    definition = {
        "title": "Slow",
        "nodes": [
            node("start", "start", 0),
            node("wait", "delay", 280, config={"seconds": 30}),
            node("end", "end", 560, config={"outputParameters": {}}),
        ],
        "edges": [edge("start", "wait"), edge("wait", "end")],
    }
    wf = server.create_workflow(definition)
    editor = EditorPage(page).open(wf["id"])
    editor.test_run()
    editor.expect_run_status("RUNNING")
    editor.expect_status("start", "COMPLETED")
    page.get_by_test_id("stop-button").click()
    editor.expect_run_status("CANCELLED")
    expect(page.get_by_test_id("test-run-button")).to_be_enabled()


def test_pinned_output_replaces_the_node_and_test_from_here(page: Page, server: Server) -> None:
    wf = server.create_workflow(
        chain(
            "Pins",
            ("fetch", "return {'n': 5}"),
            ("calc", "return {'v': ctx['fetch']['n'] + 1}"),
            end_params={"v": "{{ ctx.calc.v }}"},
        )
    )
    editor = EditorPage(page).open(wf["id"])
    editor.test_run()
    editor.expect_run_status("COMPLETED")
    expect(page.get_by_test_id("run-output")).to_contain_text('"v": 6')

    # pin typed JSON on "fetch": the next test run uses it instead of running the node
    editor.select("fetch")
    page.get_by_test_id("tab-run-data").click()
    page.get_by_test_id("pin-edit").click()
    page.get_by_test_id("pin-json").locator(".cm-content").click()
    page.keyboard.press("Control+A")
    page.keyboard.insert_text('{"n": 41}')
    page.get_by_test_id("pin-save").click()
    expect(editor.node_card("fetch").get_by_test_id("pin-badge")).to_be_visible()
    editor.test_run()
    editor.expect_run_status("COMPLETED")
    expect(page.get_by_test_id("run-output")).to_contain_text('"v": 42')
    shot(page, "editor-pinned")

    # unpin, then "Test from here" on calc: fetch's last output is reused, calc runs again
    page.get_by_test_id("pin-remove").click()
    expect(editor.node_card("fetch").get_by_test_id("pin-badge")).to_have_count(0)
    editor.select("calc")
    page.get_by_test_id("tab-run-data").click()
    page.get_by_test_id("test-from-here").click()
    editor.expect_run_status("COMPLETED")
    expect(page.get_by_test_id("run-output")).to_contain_text('"v": 42')
    expect(editor.node_card("fetch").get_by_test_id("node-status")).to_contain_text("pinned")


def test_save_conflict_offers_overwrite(page: Page, server: Server) -> None:
    wf = server.create_workflow(ORDER_TRIAGE)
    editor = EditorPage(page).open(wf["id"])
    # another tab saves first
    server.api("PUT", f"/api/workflows/{wf['id']}", {**ORDER_TRIAGE, "title": "Saved elsewhere", "version": 1})
    page.get_by_test_id("workflow-title").fill("Mine")
    editor.save()
    expect(page.get_by_test_id("conflict-dialog")).to_be_visible()
    page.get_by_test_id("conflict-overwrite").click()
    editor.expect_version(3)
    assert server.api("GET", f"/api/workflows/{wf['id']}")["title"] == "Mine"


def test_execute_then_run_detail_history_and_versions(page: Page, server: Server) -> None:
    wf = server.create_workflow(ORDER_TRIAGE)
    editor = EditorPage(page).open(wf["id"])
    page.get_by_test_id("execute-button").click()
    page.get_by_test_id("execute-input").locator(".cm-content").click()
    page.keyboard.press("Control+A")
    page.keyboard.insert_text('{"items": [1, 2, 3, 4]}')
    page.get_by_test_id("execute-confirm").click()

    expect(page.get_by_test_id("run-detail")).to_have_attribute("data-status", "COMPLETED", timeout=20_000)
    expect(page.locator('.react-flow__node[data-id="score"] [data-testid="flow-node"]')).to_have_attribute(
        "data-status", "COMPLETED"
    )
    expect(page.get_by_test_id("timeline-row")).to_have_count(4)
    score_bar = page.locator('[data-testid="timeline-row"][data-node-id="score"]')
    expect(score_bar.get_by_test_id("timeline-label")).to_have_text("Score order")  # the label, not the id
    page.locator('.react-flow__node[data-id="score"]').click()  # its run data: which worker ran it
    expect(page.get_by_test_id("run-data-worker")).to_contain_text(":")  # host:pid:id
    page.get_by_test_id("tab-events").click()
    expect(page.get_by_test_id("event-row").filter(has_text="NODE_COMPLETED")).to_have_count(4)
    page.get_by_test_id("tab-io").click()
    expect(page.get_by_test_id("run-detail-output")).to_contain_text('"route": "large"')
    page.get_by_test_id("tab-timeline").click()
    shot(page, "run-detail")

    # run history: filter by kind and status
    page.get_by_test_id("nav-runs").click()
    page.get_by_test_id("filter-workflow").select_option(wf["id"])
    page.get_by_test_id("filter-kind-production").click()
    rows = page.get_by_test_id("run-row")
    expect(rows).to_have_count(1)
    expect(rows.first).to_have_attribute("data-status", "COMPLETED")
    expect(rows.first.get_by_test_id("run-trigger")).to_have_text("editor")  # started by Execute, not "api"
    page.get_by_test_id("filter-trigger").select_option("api")
    expect(page.get_by_test_id("run-table")).to_have_count(0)
    page.get_by_test_id("filter-trigger").select_option("editor")
    expect(rows).to_have_count(1)
    page.get_by_test_id("filter-status").select_option("FAILED")
    expect(page.get_by_test_id("run-table")).to_have_count(0)
    page.get_by_test_id("filter-status").select_option("")
    shot(page, "run-history")

    # "Debug in editor": the run's outputs become pins
    rows.first.click()
    page.get_by_test_id("debug-in-editor").click()
    expect(page.locator('.react-flow__node[data-id="score"] [data-testid="pin-badge"]')).to_be_visible()

    # version history: a read-only view of version 1
    server.api("PUT", f"/api/workflows/{wf['id']}", {**ORDER_TRIAGE, "title": "Order triage v2", "version": 1})
    editor.open(wf["id"])
    page.get_by_test_id("versions-button").click()
    page.get_by_test_id("version-1").click()
    expect(page.get_by_test_id("readonly-banner")).to_contain_text("version 1")
    expect(page.get_by_test_id("save-button")).to_have_count(0)
    expect(page.get_by_test_id("workflow-title")).to_have_value("Order triage")


def test_cancel_a_production_run_from_its_detail(page: Page, server: Server) -> None:
    definition = {
        "title": "Waits",
        "nodes": [
            node("start", "start", 0),
            node("wait", "delay", 280, config={"seconds": 60}),
            node("end", "end", 560, config={"outputParameters": {}}),
        ],
        "edges": [edge("start", "wait"), edge("wait", "end")],
    }
    wf = server.create_workflow(definition)
    run = server.api("POST", f"/api/workflows/{wf['id']}/runs", {"input": {}})
    page.goto(f"/runs/{run['instanceId']}")
    expect(page.get_by_test_id("run-detail")).to_have_attribute("data-status", "RUNNING")
    # a delay is WAITING until it falls due (no worker waits: SPEC §2), its successor PENDING behind it
    wait = page.locator('.react-flow__node[data-id="wait"] [data-testid="flow-node"]')
    expect(wait).to_have_attribute("data-status", "WAITING")
    expect(wait.get_by_test_id("node-due")).to_contain_text("Waiting · done in")
    expect(page.locator('.react-flow__node[data-id="end"] [data-testid="flow-node"]')).not_to_have_attribute(
        "data-status", "DISPATCHED"
    )
    page.get_by_test_id("tab-timeline").click()
    expect(page.locator('[data-testid="timeline-row"][data-node-id="wait"] .gantt__bar')).to_have_attribute(
        "data-status", "WAITING"
    )
    page.get_by_test_id("run-cancel").click()
    expect(page.get_by_test_id("run-detail")).to_have_attribute("data-status", "CANCELLED")
    assert server.api("GET", f"/api/runs/{run['instanceId']}")["status"] == "CANCELLED"


def test_loop_iterations_are_shown(page: Page, server: Server) -> None:
    definition = {
        "title": "Loop",
        "nodes": [
            node("start", "start", 0),
            node("each", "loop", 280, config={"items": "{{ ctx.input.items }}", "concurrency": 2}),
            node("square", "python", 560, y=160, config={"code": "return ctx['loop']['item'] ** 2"}),
            node("end", "end", 560, config={"outputParameters": {"squares": "{{ ctx.each.items }}"}}),
        ],
        "edges": [edge("start", "each"), edge("each", "square", "loop"), edge("each", "end", "done")],
    }
    wf = server.create_workflow(definition)
    editor = EditorPage(page).open(wf["id"])
    editor.set_test_input('{"items": [1, 2, 3]}')
    editor.test_run()
    editor.expect_run_status("COMPLETED")
    editor.expect_status("square", "COMPLETED")
    expect(editor.node_card("square").get_by_test_id("node-status")).to_contain_text("3 iterations")
    expect(page.get_by_test_id("run-output")).to_contain_text("9")
    expect(page.locator(".fd-edge--taken")).to_have_count(3)
    shot(page, "editor-loop")
