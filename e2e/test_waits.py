"""A wait node in the editor: a test run waits on a form, the canvas shows "Waiting for a form" with its URL,
and submitting the form page finishes the run while the editor watches."""

from __future__ import annotations

import uuid

from graphs import edge, node
from pages.editor_page import EditorPage
from playwright.sync_api import Page, expect

from conftest import Server, shot


def test_a_test_run_waits_on_a_form_and_the_form_finishes_it(page: Page, server: Server) -> None:
    fields = [
        {"name": "qty", "label": "Quantity", "type": "number", "required": True},
        {"name": "size", "label": "Size", "type": "select", "options": ["S", "M"], "required": True},
        {"name": "gift", "label": "Gift wrap", "type": "boolean"},
    ]
    workflow = server.create_workflow(
        {
            "title": f"Order form {uuid.uuid4().hex[:6]}",
            "nodes": [
                node("start", "start", 0),
                node("ask", "wait", 280, label="Confirm <the> order", config={"resumeOn": "form", "fields": fields}),
                node("end", "end", 560, config={"outputParameters": {"qty": "{{ ctx.ask.qty }}"}}),
            ],
            "edges": [edge("start", "ask"), edge("ask", "end", "success")],
            "options": {"timeoutSeconds": 600},
        }
    )
    editor = EditorPage(page).open(workflow["id"])
    editor.select("ask")
    expect(page.get_by_test_id("wait-resume-on")).to_have_value("form")
    expect(page.get_by_test_id("wait-field-1-options")).to_have_value("S, M")

    editor.test_run()
    editor.expect_status("ask", "WAITING")
    card = editor.node_card("ask")
    expect(card.get_by_test_id("node-waiting")).to_contain_text("Waiting for a form")
    url = card.get_by_test_id("node-resume-url").input_value()
    assert "/forms/" in url
    shot(page, "wait-node-waiting")

    form = page.context.new_page()
    form.goto(url)
    expect(form).to_have_title("e2e · Confirm <the> order")
    form.get_by_label("Quantity").fill("3")
    form.get_by_label("Size").select_option("M")
    form.get_by_label("Gift wrap").check()
    form.get_by_role("button", name="Submit").click()
    expect(form.locator("body")).to_contain_text("Thank you")
    form.close()

    editor.expect_status("ask", "COMPLETED")
    editor.expect_run_status("COMPLETED")
