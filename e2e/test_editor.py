"""The editor: palette drag and drop, connecting handles, cycle refusal, validation on the canvas,
branch editing, keyboard shortcuts with undo/redo, copy/paste, auto-layout and the help overlay."""

from __future__ import annotations

import re

from graphs import ORDER_TRIAGE, chain
from pages.editor_page import EditorPage
from playwright.sync_api import Page, expect

from conftest import Server, shot


def test_build_a_workflow_by_drag_and_drop_and_test_run_it(page: Page, server: Server) -> None:
    wf = server.create_workflow(chain("Built by hand", end_params={"total": "{{ ctx.double.value }}"}))
    editor = EditorPage(page).open(wf["id"])
    before = editor.node_ids()
    editor.drag_from_palette("python", 420, 260)
    python_id = editor.new_node_id("python", before)
    expect(editor.node(python_id)).to_be_visible()
    expect(editor.page.get_by_test_id("unsaved-indicator")).to_be_visible()

    # configure it: label, output variable, code (CodeMirror)
    editor.select(python_id)
    page.get_by_test_id("node-label").fill("Double it")
    page.get_by_test_id("output-variable").fill("double")  # leaving the label gives the node its readable id
    python_id = "double_it"
    expect(page.get_by_test_id("inspector")).to_have_attribute("data-node-id", python_id)
    editor.set_code("return {'value': ctx['input']['n'] * 2}")

    # rewire: start -> python -> end (remove the old start -> end edge first)
    editor.delete_edge(editor.edges().first)
    editor.connect_drawing("start", "default", python_id, edges_after=1)  # drawn before the second drag starts
    editor.connect_drawing(python_id, "success", "end", edges_after=2)
    editor.tidy_up()

    expect(page.get_by_test_id("problem-count")).to_have_text("0", timeout=5000)
    editor.set_test_input('{"n": 21}')
    editor.test_run()
    editor.expect_run_status("COMPLETED")
    editor.expect_status(python_id, "COMPLETED")
    expect(page.get_by_test_id("run-output")).to_contain_text('"total": 42')
    expect(page.locator(".fd-edge--taken")).to_have_count(2)
    shot(page, "editor-test-run")

    # the node's run data: input context and output
    editor.select(python_id)
    page.get_by_test_id("tab-run-data").click()
    expect(page.get_by_test_id("run-data-input")).to_contain_text('"n": 21')
    expect(page.get_by_test_id("run-data-output")).to_contain_text('"value": 42')

    editor.save()
    editor.expect_version(2)
    expect(page.get_by_test_id("unsaved-indicator")).to_have_count(0)
    saved = server.api("GET", f"/api/workflows/{wf['id']}")
    assert {n["id"] for n in saved["nodes"]} == {"start", "end", python_id}
    assert next(n for n in saved["nodes"] if n["id"] == python_id)["outputVariable"] == "double"


def test_connections_refuse_cycles_and_bad_handles_with_a_reason(page: Page, server: Server) -> None:
    wf = server.create_workflow(chain("Cycle check", ("a", "return 1"), ("b", "return 2")))
    editor = EditorPage(page).open(wf["id"])
    expect(editor.edges()).to_have_count(3)
    editor.connect("b", "error", "a")
    expect(editor.toast("would close a cycle: a → b → a")).to_be_visible()
    expect(editor.edges()).to_have_count(3)
    # the handles each type really has
    expect(editor.node("a").locator(".react-flow__handle.source")).to_have_count(2)
    expect(editor.handle("a", "success")).to_have_count(1)
    expect(editor.handle("a", "error")).to_have_count(1)
    expect(editor.node("start").locator(".react-flow__handle.target")).to_have_count(0)
    expect(editor.node("end").locator(".react-flow__handle.source")).to_have_count(0)


def test_validation_problems_show_on_nodes_and_in_the_list(page: Page, server: Server) -> None:
    wf = server.create_workflow(chain("Validation", ("calc", "return 1")))
    editor = EditorPage(page).open(wf["id"])
    editor.select("calc")
    editor.set_code("return (")
    expect(editor.node_card("calc")).to_have_attribute("data-problems", "error", timeout=5000)
    page.get_by_test_id("bottom-tab-problems").click()
    expect(page.locator('[data-testid="problem"][data-node-id="calc"]')).to_contain_text("SyntaxError")
    shot(page, "editor-validation")
    # saving is refused while errors remain
    editor.save()
    expect(editor.toast("Not saved")).to_be_visible()
    editor.expect_version(1)
    editor.set_code("return {'ok': True}")
    expect(editor.node_card("calc")).not_to_have_attribute("data-problems", "error", timeout=5000)


def test_condition_branch_editor_handles_follow(page: Page, server: Server) -> None:
    wf = server.create_workflow(ORDER_TRIAGE)
    editor = EditorPage(page).open(wf["id"])
    source_handles = editor.node("big").locator(".react-flow__handle.source")
    expect(source_handles).to_have_count(2)
    editor.select("big")
    page.get_by_test_id("branch-add").click()
    page.get_by_test_id("branch-1-label").fill("Medium")
    page.get_by_test_id("branch-1-expression").fill("ctx.sc")
    expect(page.get_by_test_id("template-suggestions")).to_contain_text("ctx.score")
    page.get_by_test_id("template-suggestions").get_by_text("ctx.score", exact=True).click()
    page.get_by_test_id("branch-1-expression").press("End")
    page.get_by_test_id("branch-1-expression").type(".value > 1")
    expect(page.get_by_test_id("branch-1-expression")).to_have_value("ctx.score.value > 1")
    expect(source_handles).to_have_count(3)
    labels = editor.node("big").locator(".fd-node__output span")
    expect(labels).to_have_text(["Large", "Medium", "else"])
    # reorder: handles follow
    page.get_by_test_id("branch-0-down").click()
    expect(labels).to_have_text(["Medium", "Large", "else"])
    # removing the branch with an edge drops the edge; undo brings both back
    edges_before = editor.edges().count()
    page.get_by_test_id("branch-1-remove").click()
    expect(labels).to_have_text(["Medium", "else"])
    expect(editor.edges()).to_have_count(edges_before - 1)
    page.locator(".react-flow__pane").click(position={"x": 40, "y": 40})
    page.keyboard.press("Control+z")
    expect(labels).to_have_text(["Medium", "Large", "else"])
    expect(editor.edges()).to_have_count(edges_before)
    shot(page, "editor-condition")


def test_keyboard_copy_paste_undo_redo_delete_and_help(page: Page, server: Server) -> None:
    wf = server.create_workflow(ORDER_TRIAGE)
    other = server.create_workflow(chain("Paste target"))
    editor = EditorPage(page).open(wf["id"])
    editor.node("score").click()
    page.keyboard.press("Control+c")
    page.keyboard.press("Control+v")
    expect(editor.nodes()).to_have_count(5)
    page.keyboard.press("Control+z")
    expect(editor.nodes()).to_have_count(4)
    page.keyboard.press("Control+Shift+z")
    expect(editor.nodes()).to_have_count(5)
    page.keyboard.press("Control+d")
    expect(editor.nodes()).to_have_count(6)
    page.keyboard.press("Delete")
    expect(editor.nodes()).to_have_count(5)
    page.keyboard.press("Control+a")
    page.keyboard.press("Delete")
    expect(editor.nodes()).to_have_count(0)
    page.keyboard.press("Control+z")
    expect(editor.nodes()).to_have_count(5)
    page.keyboard.press("Shift+?")
    expect(page.get_by_test_id("help-overlay")).to_be_visible()
    expect(page.get_by_test_id("shortcut-undo")).to_contain_text(re.compile(r"Ctrl\+Z"))
    shot(page, "help-overlay")
    page.keyboard.press("Escape")
    expect(page.get_by_test_id("help-overlay")).to_have_count(0)

    # paste into another workflow (leaving asks first: there are unsaved changes)
    page.get_by_test_id("nav-workflows").click()
    expect(page.get_by_test_id("leave-dialog")).to_be_visible()
    page.get_by_test_id("leave-confirm").click()
    EditorPage(page).open(other["id"])
    page.locator(".react-flow__pane").click(position={"x": 40, "y": 40})
    page.keyboard.press("Control+v")
    expect(editor.nodes()).to_have_count(3)
    # the pasted node's id is made from its label ("Score order")
    expect(page.locator('.react-flow__node[data-id="score_order"]')).to_have_count(1)
    pasted = page.locator('.react-flow__node[data-id="score_order"]')
    pasted.click()
    page.get_by_test_id("node-delete").click()
    expect(editor.nodes()).to_have_count(2)
