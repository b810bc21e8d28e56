"""Issue 24: a loop-body node's Run data in the editor. Its first attempt is "attempt 1 of 3" (never 0),
and each iteration opens on what the node received there, ``loop.item`` included, and what it returned."""

from __future__ import annotations

from graphs import edge, node
from pages.editor_page import EditorPage
from playwright.sync_api import Page, expect

from conftest import Server, shot


def test_a_loop_iteration_shows_its_loop_item_and_output(page: Page, server: Server) -> None:
    definition = {
        "title": "Fruit",
        "nodes": [
            node("start", "start", 0),
            node("each", "loop", 280, config={"items": ["apple", "pear", "plum"]}),
            node("shout", "python", 560, 160, config={"code": "return ctx['loop']['item'].upper()"}),
            node("end", "end", 840, config={"outputParameters": {}}),
        ],
        "edges": [edge("start", "each"), edge("each", "shout", "loop"), edge("each", "end", "done")],
    }
    definition["nodes"][2]["retry"] = {"maxAttempts": 3}
    wf = server.create_workflow(definition)
    editor = EditorPage(page).open(wf["id"])
    editor.test_run()
    editor.expect_run_status("COMPLETED")
    editor.select("shout")
    page.get_by_test_id("tab-run-data").click()
    expect(page.get_by_test_id("run-data-attempts")).to_have_text("attempt 1 of 3")
    expect(page.get_by_test_id("run-data-status")).to_have_attribute("data-status", "COMPLETED")
    page.get_by_test_id("iteration-row-1").click()
    expect(page.get_by_test_id("run-data-iteration")).to_contain_text("#1")
    expect(page.get_by_test_id("run-data-input")).to_contain_text('"item": "pear"')
    expect(page.get_by_test_id("run-data-output")).to_have_text('"PEAR"')
    shot(page, "editor-loop-iteration")
