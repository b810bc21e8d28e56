"""Issue 21: the run's output budget in the editor. A loop whose body returns 12 MB per item fails at
FLOWDECK_MAX_RUN_BYTES (64 MiB by default) and that error is the one the run view shows; an output too
large to show is its size in bytes and a link that returns it in full."""

from __future__ import annotations

from graphs import edge, node
from pages.editor_page import EditorPage
from playwright.sync_api import Page, expect

from conftest import Server, shot


def test_the_budget_error_is_the_one_the_run_view_shows(page: Page, server: Server) -> None:
    definition = {
        "title": "Too much output",
        "nodes": [
            node("start", "start", 0),
            node("each", "loop", 280, config={"items": [0, 1, 2, 3, 4]}),
            node("big", "python", 560, 160, config={"code": "return 'x' * 12_000_000"}),
            node("end", "end", 840, config={"outputParameters": {}}),
        ],
        "edges": [edge("start", "each"), edge("each", "big", "loop"), edge("each", "end", "done")],
    }
    wf = server.create_workflow(definition)
    editor = EditorPage(page).open(wf["id"])
    editor.test_run()
    editor.expect_run_status("FAILED", timeout=60_000)
    expect(page.get_by_test_id("run-error")).to_contain_text("FLOWDECK_MAX_RUN_BYTES")
    expect(page.get_by_test_id("run-error")).to_contain_text("node 'big'")
    editor.select("big")
    page.get_by_test_id("tab-run-data").click()
    links = page.get_by_test_id("iteration-output-link")
    expect(links).to_have_count(2)  # two 12 MB items fit in 64 MiB, counted twice each (row and loop copy)
    expect(links.first).to_contain_text("11.4 MiB")
    expect(page.get_by_test_id("run-data")).to_contain_text("FLOWDECK_MAX_RUN_BYTES")
    shot(page, "editor-run-budget")


def test_a_truncated_output_shows_its_size_and_a_working_link(page: Page, server: Server) -> None:
    definition = {
        "title": "Large output",
        "nodes": [
            node("start", "start", 0),
            node("big", "python", 280, config={"code": "return 'y' * 100_000"}),
            node("end", "end", 560, config={"outputParameters": {}}),
        ],
        "edges": [edge("start", "big"), edge("big", "end", "success")],
    }
    wf = server.create_workflow(definition)
    editor = EditorPage(page).open(wf["id"])
    editor.test_run()
    editor.expect_run_status("COMPLETED")
    editor.select("big")
    page.get_by_test_id("tab-run-data").click()
    expect(page.get_by_test_id("run-data-output-truncated-size")).to_have_text("100,002 bytes")
    link = page.get_by_test_id("run-data-output-truncated-link")
    href = link.get_attribute("href")
    assert href is not None and href.endswith("/nodes/big/output")
    with page.context.expect_page() as opened:
        link.click()
    full = opened.value
    full.wait_for_load_state()
    assert full.evaluate("document.body.innerText.length") >= 100_002
    response = page.request.get(href)
    assert response.status == 200 and response.json() == "y" * 100_000
