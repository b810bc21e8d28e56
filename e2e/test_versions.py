"""Version history as people read it: a message and author per version, the diff of two versions side by side,
and "Restore" saving an old version again as the latest."""

from __future__ import annotations

from graphs import ORDER_TRIAGE
from pages.editor_page import EditorPage
from playwright.sync_api import Page, expect

from conftest import EMAIL, Server, shot


def test_save_with_a_message_compare_two_versions_and_restore_the_older(page: Page, server: Server) -> None:
    wf = server.create_workflow(ORDER_TRIAGE)
    editor = EditorPage(page).open(wf["id"])

    # an edit saved with a message: the code of "Score order" and the title
    editor.select("score")
    editor.set_code("return {'value': 99}")
    page.get_by_test_id("workflow-title").fill("Order triage (fixed)")
    page.get_by_test_id("save-with-message").click()
    page.get_by_test_id("save-message-input").fill("Score everything 99")
    page.get_by_test_id("save-message-confirm").click()
    editor.expect_version(2)

    page.get_by_test_id("versions-button").click()
    menu = page.get_by_test_id("versions-menu")
    expect(menu.get_by_test_id("version-2")).to_contain_text("Score everything 99")
    expect(menu.get_by_test_id("version-2").get_by_test_id("version-meta")).to_contain_text(EMAIL)
    menu.get_by_test_id("version-compare-2").click()

    dialog = page.get_by_test_id("version-diff-dialog")
    score = dialog.locator('[data-testid="diff-node"][data-node-id="score"]')
    expect(score).to_have_attribute("data-kind", "changed")
    code = dialog.locator('[data-testid="diff-field"][data-path="config.code"]')
    expect(code.locator("td").nth(0)).to_contain_text("len(ctx['input']['items'])")  # v1, left
    expect(code.locator("td").nth(1)).to_have_text("return {'value': 99}")  # v2, right
    expect(dialog.locator('[data-testid="diff-field"][data-path="title"]')).to_contain_text("Order triage (fixed)")
    shot(page, "version-diff")

    dialog.get_by_test_id("diff-restore").click()  # restore v1: saved again as v3
    editor.expect_version(3)
    expect(page.get_by_test_id("workflow-title")).to_have_value("Order triage")
    latest = server.api("GET", f"/api/workflows/{wf['id']}")
    assert latest["version"] == 3 and latest["title"] == "Order triage"
    assert next(n for n in latest["nodes"] if n["id"] == "score")["config"] == ORDER_TRIAGE["nodes"][1]["config"]
    versions = server.api("GET", f"/api/workflows/{wf['id']}/versions")["items"]
    assert [(v["version"], v["message"]) for v in versions] == [
        (3, "Restored version 1"),
        (2, "Score everything 99"),
        (1, None),
    ]


def test_restore_from_a_versions_read_only_view(page: Page, server: Server) -> None:
    wf = server.create_workflow(ORDER_TRIAGE)
    server.api("PUT", f"/api/workflows/{wf['id']}", {**ORDER_TRIAGE, "title": "Second", "version": 1})
    page.goto(f"/workflows/{wf['id']}/versions/1")
    expect(page.get_by_test_id("readonly-banner")).to_contain_text("version 1")
    page.get_by_test_id("restore-version").click()
    editor = EditorPage(page)
    editor.expect_version(3)
    expect(page.get_by_test_id("workflow-title")).to_have_value("Order triage")
    expect(page.get_by_test_id("save-button")).to_be_disabled()  # nothing unsaved: it is the latest version


def test_a_save_in_another_tab_is_noticed_at_once(page: Page, server: Server) -> None:
    wf = server.create_workflow(ORDER_TRIAGE)
    editor = EditorPage(page).open(wf["id"])
    page.get_by_test_id("workflow-title").fill("Saved here")
    editor.save()  # this tab's own save: no notice about it
    editor.expect_version(2)
    page.get_by_test_id("workflow-title").fill("Still editing here")

    # "another tab" saves (the same user, through the API)
    body = {**ORDER_TRIAGE, "title": "Saved elsewhere", "version": 2, "versionMessage": "tweak"}
    server.api("PUT", f"/api/workflows/{wf['id']}", body)
    notice = page.get_by_test_id("saved-elsewhere")
    expect(notice).to_have_attribute("data-version", "3")  # v3, never this tab's own v2
    expect(notice).to_contain_text("tweak")
    expect(notice).to_contain_text("would conflict")  # unsaved edits here
    shot(page, "saved-elsewhere")
    notice.get_by_test_id("saved-elsewhere-reload").click()
    page.get_by_test_id("confirm-dialog").get_by_test_id("confirm-ok").click()  # drop the edits here
    editor.expect_version(3)
    expect(page.get_by_test_id("workflow-title")).to_have_value("Saved elsewhere")
    expect(notice).to_have_count(0)
