"""Approvals in the browser: a run waits on an approval; its run page shows "Waiting for an approval"; another
user of the tenant sees it counted on the Approvals badge, grants it from the Approvals page, and the run page
(which keeps watching) lights the node up and completes. The requester's own card refuses self-approval."""

from __future__ import annotations

import uuid

from graphs import edge, node
from pages.editor_page import EditorPage
from playwright.sync_api import Browser, Page, expect

from conftest import PASSWORD, VIEWPORT, Server, shot


def test_an_approval_granted_from_the_approvals_page_while_the_run_page_watches(
    page: Page, browser: Browser, server: Server
) -> None:
    approver = f"approver-{uuid.uuid4().hex[:6]}@example.com"
    server.add_user(approver)
    workflow = server.create_workflow(
        {
            "title": f"Refund {uuid.uuid4().hex[:6]}",
            "nodes": [
                node("start", "start", 0),
                node("ok", "wait", 280, label="Sign off the refund", config={"resumeOn": "approval"}),
                node("end", "end", 560, config={"outputParameters": {"by": "{{ ctx.ok.decisions[0].email }}"}}),
            ],
            "edges": [edge("start", "ok"), edge("ok", "end", "success")],
            "options": {"timeoutSeconds": 600},
        }
    )
    run_id = server.api("POST", f"/api/workflows/{workflow['id']}/runs", {"input": {}})["instanceId"]

    page.goto(f"/runs/{run_id}")
    card = page.locator('.react-flow__node[data-id="ok"] [data-testid="flow-node"]')
    expect(card).to_have_attribute("data-status", "WAITING", timeout=15_000)
    expect(card.get_by_test_id("node-waiting")).to_contain_text("Waiting for an approval")
    banner = page.get_by_test_id("run-waiting-approval")
    expect(banner).to_contain_text("Waiting for an approval: Sign off the refund")
    EditorPage(page).wait_for_still_canvas()  # the run panel's opening pans the canvas: a click aimed before misses
    card.get_by_test_id("approve").click()  # the e2e user started the run: not theirs to approve
    expect(card.get_by_test_id("approval-error")).to_contain_text("self-approval")

    other = browser.new_context(viewport=VIEWPORT, base_url=server.url)
    try:
        approvals = other.new_page()
        approvals.set_default_timeout(10_000)
        approvals.goto("/login")
        approvals.get_by_test_id("login-email").fill(approver)
        approvals.get_by_test_id("login-password").fill(PASSWORD)
        approvals.get_by_test_id("login-submit").click()
        expect(approvals.get_by_test_id("approvals-badge")).to_have_text("1")
        approvals.get_by_test_id("nav-approvals").click()
        item = approvals.locator('[data-testid="approval-card"][data-approval-id]').filter(
            has_text="Sign off the refund"
        )
        expect(item).to_contain_text(workflow["title"])
        expect(item).to_contain_text("Requested by e2e@example.com")
        shot(approvals, "approvals-page")
        item.get_by_test_id("approval-comment").fill("refund is fine")
        item.get_by_test_id("approve").click()
        expect(approvals.get_by_text("Nothing waits for your approval.")).to_be_visible()
        expect(approvals.get_by_test_id("approvals-badge")).to_have_count(0)
    finally:
        other.close()

    expect(card).to_have_attribute("data-status", "COMPLETED", timeout=15_000)
    expect(banner).to_have_count(0)
    expect(page.get_by_test_id("run-detail")).to_have_attribute("data-status", "COMPLETED", timeout=15_000)
    assert server.api("GET", f"/api/runs/{run_id}")["output"] == {"by": approver}


def test_a_designer_finishes_a_test_run_from_the_canvas_card(page: Page, server: Server) -> None:
    workflow = server.create_workflow(
        {
            "title": f"Payout {uuid.uuid4().hex[:6]}",
            "nodes": [
                node("start", "start", 0),
                node("ok", "wait", 280, label="Approve the payout", config={"resumeOn": "approval", "required": 2}),
                node("end", "end", 560, config={"outputParameters": {"d": "{{ ctx.ok.decision }}"}}),
            ],
            "edges": [edge("start", "ok"), edge("ok", "end", "success")],
            "options": {"timeoutSeconds": 600},
        }
    )
    editor = EditorPage(page).open(workflow["id"])
    editor.select("ok")
    expect(page.get_by_test_id("wait-resume-on")).to_have_value("approval")
    expect(page.get_by_test_id("wait-required")).to_have_value("2")
    expect(editor.handle("ok", "rejected")).to_be_visible()

    editor.test_run()
    editor.expect_status("ok", "WAITING")
    card = editor.node_card("ok")
    expect(card.get_by_test_id("node-waiting")).to_contain_text("Waiting for an approval")
    editor.wait_for_still_canvas()  # the run panel's opening pans the canvas: a click aimed before misses
    card.get_by_test_id("approve").click()  # the test run's designer decides it alone, though 2 are required
    editor.expect_status("ok", "COMPLETED")
    editor.expect_run_status("COMPLETED")
