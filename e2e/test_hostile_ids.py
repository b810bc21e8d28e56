"""Node ids the API accepts but JavaScript objects treat specially (issue 11.8): the editor and the run
pages must open, run and light up a workflow whose ids are ``__proto__``, ``constructor`` and ``toString``."""

from __future__ import annotations

from graphs import edge, node
from pages.editor_page import EditorPage
from playwright.sync_api import Page, expect

from conftest import Server, shot

IDS = ("__proto__", "constructor", "toString")


def _definition() -> dict[str, object]:
    return {
        "title": "Hostile ids",
        "nodes": [
            node("__proto__", "start", 0),
            node("constructor", "python", 280, config={"code": "return {'n': ctx['input']['n'] + 1}"}),
            node("toString", "end", 560, config={"outputParameters": {"n": "{{ ctx.constructor.n }}"}}),
        ],
        "edges": [edge("__proto__", "constructor"), edge("constructor", "toString", "success")],
    }


def test_a_workflow_with_prototype_names_as_ids_opens_runs_and_shows_its_runs(page: Page, server: Server) -> None:
    crashes: list[str] = []
    page.on("pageerror", lambda error: crashes.append(str(error)))
    wf = server.create_workflow(_definition())

    editor = EditorPage(page).open(wf["id"])
    expect(editor.nodes()).to_have_count(3)
    assert editor.node_ids() == set(IDS)
    editor.select("constructor")
    expect(page.get_by_test_id("inspector")).to_contain_text("ctx.constructor")
    editor.set_test_input('{"n": 41}')
    editor.test_run()
    editor.expect_run_status("COMPLETED")
    for node_id in IDS:
        editor.expect_status(node_id, "COMPLETED")
    page.get_by_test_id("tab-run-data").click()
    expect(page.get_by_test_id("inspector")).to_contain_text('"n": 42')
    run_id = page.get_by_test_id("run-panel").get_attribute("data-run-id")
    assert run_id
    shot(page, "hostile-ids-editor")

    # The test run's page: its graph comes from the run's own log.
    page.goto(f"/runs/{run_id}")
    expect(page.get_by_test_id("run-detail")).to_have_attribute("data-status", "COMPLETED")
    for node_id in IDS:
        expect(editor.node_card(node_id)).to_have_attribute("data-status", "COMPLETED")
    expect(page.get_by_test_id("timeline-row")).to_have_count(3)

    # A production run, opened while it may still run: the live snapshot and updates fold in too.
    run = server.api("POST", f"/api/workflows/{wf['id']}/runs", {"input": {"n": 1}})
    page.goto(f"/runs/{run['instanceId']}")
    expect(page.get_by_test_id("run-detail")).to_have_attribute("data-status", "COMPLETED", timeout=20_000)
    for node_id in IDS:
        expect(editor.node_card(node_id)).to_have_attribute("data-status", "COMPLETED")
    page.get_by_test_id("tab-io").click()
    expect(page.get_by_test_id("run-detail-output")).to_contain_text('"n": 2')
    shot(page, "hostile-ids-run")
    assert crashes == []
