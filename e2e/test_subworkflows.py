"""Sub-workflows in the editor: a Run workflow node picks a saved workflow from a searchable list, passes it an
argument, and the run detail links the parent run to its child run and back."""

from __future__ import annotations

import re
import uuid

from graphs import chain, edge, node
from pages.editor_page import EditorPage
from pages.workflow_node import RunLinks, WorkflowNodeForm
from playwright.sync_api import Page, expect

from conftest import Server, shot


def test_call_a_child_workflow_and_follow_the_links_between_the_runs(page: Page, server: Server) -> None:
    tag = uuid.uuid4().hex[:6]
    child_title = f"Doubler {tag}"
    server.create_workflow(
        {
            "title": child_title,
            "nodes": [
                node("start", "start", 0),
                node("double", "python", 280, config={"code": "return {'doubled': ctx['input']['x'] * 2}"}),
                node("end", "end", 560, config={"outputParameters": {"doubled": "{{ ctx.double.doubled }}"}}),
            ],
            "edges": [edge("start", "double"), edge("double", "end", "success")],
        }
    )
    parent = server.create_workflow(chain(f"Parent {tag}", end_params={"result": "{{ ctx.sub.doubled }}"}))

    editor = EditorPage(page).open(parent["id"])
    before = editor.node_ids()
    editor.drag_from_palette("workflow", 420, 300)
    expect(editor.nodes()).to_have_count(len(before) + 1)
    (call,) = editor.node_ids() - before
    editor.select(call)

    # pick the child from the searchable list (typing filters it), then fill its argument
    form = WorkflowNodeForm(page)
    form.pick(child_title)
    form.set_argument("x", "{{ ctx.input.n }}")
    variable = page.get_by_test_id("output-variable")
    variable.fill("sub")
    variable.press("Enter")
    expect(page.get_by_test_id("workflow-open")).to_have_attribute("href", re.compile(r"^/workflows/"))
    expect(editor.node_card(call).get_by_test_id("node-called-workflow")).to_contain_text(child_title)

    # wire start -> workflow -> end instead of start -> end
    page.locator(".react-flow__edge").first.click(force=True)
    page.keyboard.press("Delete")
    expect(editor.edges()).to_have_count(0)
    editor.connect_drawing("start", "default", call, edges_after=1)
    editor.connect_drawing(call, "success", "end", edges_after=2)
    page.keyboard.press("Shift+L")  # tidy up
    expect(page.get_by_test_id("problem-count")).to_have_text("0", timeout=5000)

    editor.save()
    editor.expect_version(2)
    saved = next(n for n in server.api("GET", f"/api/workflows/{parent['id']}")["nodes"] if n["id"] == call)
    assert saved["type"] == "workflow"
    assert saved["config"]["input"] == {"x": "{{ ctx.input.n }}"}
    assert "version" not in saved["config"]

    # run it in production: the run detail links to the child run
    page.get_by_test_id("execute-button").click()
    page.get_by_test_id("execute-input").locator(".cm-content").click()
    page.keyboard.press("Control+A")
    page.keyboard.insert_text('{"n": 21}')
    page.get_by_test_id("execute-confirm").click()
    links = RunLinks(page)
    links.expect_status("COMPLETED")
    parent_run = page.url.rstrip("/").rsplit("/", 1)[-1]
    page.get_by_test_id("tab-io").click()
    expect(page.get_by_test_id("run-detail-output")).to_contain_text('"result": 42')
    expect(links.child_link(call)).to_be_visible()
    shot(page, "subworkflow-parent-run")

    # the child run says who called it, and links back
    links.child_link(call).click()
    expect(page).not_to_have_url(re.compile(re.escape(parent_run) + "$"))
    links.expect_status("COMPLETED")
    expect(links.parent_banner()).to_contain_text(f"Called by run {parent_run[:8]}")
    expect(links.parent_banner()).to_contain_text(f"(node {call})")
    expect(page.locator(".run-meta")).to_contain_text("workflow · started")  # the trigger
    shot(page, "subworkflow-child-run")
    links.parent_banner().get_by_test_id("run-parent-link").click()
    expect(page).to_have_url(re.compile(re.escape(parent_run) + "$"))
    expect(links.child_link(call)).to_be_visible()
