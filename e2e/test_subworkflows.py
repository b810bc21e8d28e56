"""Sub-workflows in the editor: a Run workflow node picks a saved workflow from a searchable list, passes it an
argument, and the run detail links the parent run to its child run and back."""

from __future__ import annotations

import re
import uuid
from typing import Any

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
    editor.delete_edge(editor.edges().first)
    editor.connect_drawing("start", "default", call, edges_after=1)
    editor.connect_drawing(call, "success", "end", edges_after=2)
    editor.tidy_up()
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


def _caller(title: str, child_id: str) -> dict[str, Any]:
    """start -> sub (a workflow node calling ``child_id`` with x = input n) -> end (result = its doubled)."""
    return {
        "title": title,
        "nodes": [
            node("start", "start", 0),
            node(
                "sub",
                "workflow",
                280,
                label="Call child",
                config={"workflowId": child_id, "input": {"x": "{{ ctx.input.n }}"}},
            ),
            node("end", "end", 560, config={"outputParameters": {"result": "{{ ctx.sub.doubled }}"}}),
        ],
        "edges": [edge("start", "sub"), edge("sub", "end", "success")],
    }


def test_a_test_run_links_its_child_while_the_child_still_runs(page: Page, server: Server) -> None:
    tag = uuid.uuid4().hex[:6]
    child = server.create_workflow(
        {
            "title": f"Slow doubler {tag}",
            "nodes": [
                node("start", "start", 0),
                node("wait", "delay", 280, config={"seconds": 6}),
                node("double", "python", 560, config={"code": "return {'doubled': ctx['input']['x'] * 2}"}),
                node("end", "end", 840, config={"outputParameters": {"doubled": "{{ ctx.double.doubled }}"}}),
            ],
            "edges": [edge("start", "wait"), edge("wait", "double"), edge("double", "end", "success")],
        }
    )
    parent = server.create_workflow(_caller(f"Caller {tag}", child["id"]))
    editor = EditorPage(page).open(parent["id"])
    expect(editor.node_card("sub").get_by_test_id("node-called-workflow")).to_contain_text(f"Slow doubler {tag}")
    editor.set_test_input('{"n": 4}')
    editor.test_run()

    # the link comes with the node's live RUNNING update, before the child (6 s of delay) is done
    link = RunLinks(page).child_link("sub")
    expect(link).to_be_visible()
    expect(editor.node_card("end")).to_have_attribute("data-status", re.compile("IDLE|PENDING|DISPATCHED"))
    editor.expect_run_status("COMPLETED")
    expect(page.get_by_test_id("run-output")).to_contain_text('"result": 8')
    editor.select("sub")
    page.get_by_test_id("tab-run-data").click()
    expect(page.get_by_test_id("run-data-child-run")).to_be_visible()

    # the child of a test run is a test run, and says who called it
    link.click()
    RunLinks(page).expect_status("COMPLETED")
    expect(RunLinks(page).parent_banner()).to_contain_text("(node sub)")
    expect(page.get_by_test_id("run-title")).to_have_text(f"Slow doubler {tag}")  # titled by its workflow


def test_a_deleted_child_workflow_is_flagged_and_another_can_be_picked(page: Page, server: Server) -> None:
    tag = uuid.uuid4().hex[:6]
    doomed = server.create_workflow(chain(f"Doomed {tag}", end_params={"doubled": "{{ ctx.input.x }}"}))
    other_title = f"Replacement {tag}"
    server.create_workflow(chain(other_title, end_params={"doubled": "{{ ctx.input.x }}"}))
    parent = server.create_workflow(_caller(f"Orphan {tag}", doomed["id"]))
    server.api("DELETE", f"/api/workflows/{doomed['id']}")

    editor = EditorPage(page).open(parent["id"])
    expect(editor.node_card("sub").get_by_test_id("node-called-workflow")).to_contain_text(f"missing: {doomed['id']}")
    expect(editor.node_card("sub")).to_have_attribute("data-problems", "error")
    editor.select("sub")
    expect(page.get_by_test_id("workflow-missing")).to_contain_text(doomed["id"])

    WorkflowNodeForm(page).pick(other_title)
    expect(page.get_by_test_id("workflow-missing")).to_have_count(0)
    expect(WorkflowNodeForm(page).argument("x")).to_have_value("{{ ctx.input.n }}")  # what was typed is kept
    expect(editor.node_card("sub")).to_have_attribute("data-problems", "none")
    page.get_by_test_id("undo").click()  # one step back: the missing workflow again
    expect(page.get_by_test_id("workflow-missing")).to_contain_text(doomed["id"])
