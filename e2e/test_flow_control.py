"""Flow control in the editor's Settings panel (issue 23 item 4): a concurrency limit per key, debounce and
priority edited with the browser's checks, saved and read back through the API; a run started with a
priority from the Execute dialog carries it."""

from __future__ import annotations

import re

from graphs import chain
from pages.editor_page import EditorPage
from pages.settings_panel import SettingsPanel
from playwright.sync_api import Page, expect

from conftest import Server, shot


def test_flow_control_is_edited_checked_and_saved(page: Page, server: Server) -> None:
    wf = server.create_workflow(chain("Per-customer sync"))
    editor = EditorPage(page).open(wf["id"])
    settings = SettingsPanel(page).open()
    section = settings.root.get_by_test_id("flow-control")

    section.get_by_test_id("flow-concurrency-on").check()
    limit = section.get_by_test_id("flow-concurrency-limit")
    limit.fill("0")
    expect(section).to_contain_text("A whole number from 1 to 10,000")
    limit.fill("2")
    expect(section).not_to_contain_text("A whole number from 1 to 10,000")
    key = section.get_by_test_id("flow-concurrency-key")
    key.fill("{{ ctx.input.customer ")
    expect(section).to_contain_text("every {{ needs its }}")
    key.fill("{{ ctx.input.customer }}")
    section.get_by_test_id("flow-concurrency-strategy").select_option("cancel_in_progress")

    section.get_by_test_id("flow-debounce-on").check()
    section.get_by_test_id("flow-debounce-seconds").fill("30")
    section.get_by_test_id("flow-priority").fill("101")
    expect(section).to_contain_text("A whole number from 1 to 100")
    section.get_by_test_id("flow-priority").fill("80")
    expect(page.get_by_test_id("problem-count")).to_have_text("0", timeout=5000)  # the server agrees
    shot(page, "settings-flow-control")

    editor.save()
    editor.expect_version(2)
    options = server.api("GET", f"/api/workflows/{wf['id']}")["options"]
    assert options["concurrency"] == {"limit": 2, "key": "{{ ctx.input.customer }}", "strategy": "cancel_in_progress"}
    assert options["debounce"] == {"seconds": 30}
    assert options["priority"] == 80

    page.reload()
    expect(page.get_by_test_id("editor")).to_have_attribute("data-loaded", "true")
    section = SettingsPanel(page).open().root.get_by_test_id("flow-control")
    expect(section.get_by_test_id("flow-concurrency-limit")).to_have_value("2")
    expect(section.get_by_test_id("flow-concurrency-strategy")).to_have_value("cancel_in_progress")
    expect(section.get_by_test_id("flow-priority")).to_have_value("80")

    # switched off again: the options are gone
    section.get_by_test_id("flow-debounce-on").uncheck()
    section.get_by_test_id("flow-concurrency-on").uncheck()
    editor.save()
    editor.expect_version(3)
    options = server.api("GET", f"/api/workflows/{wf['id']}")["options"]
    assert "concurrency" not in options and "debounce" not in options


def test_the_execute_dialog_starts_a_run_with_a_priority(page: Page, server: Server) -> None:
    wf = server.create_workflow(chain("Prioritised"))
    EditorPage(page).open(wf["id"])
    page.get_by_test_id("execute-button").click()
    dialog = page.get_by_test_id("execute-dialog")
    dialog.get_by_test_id("execute-priority").fill("0")
    expect(dialog).to_contain_text("A whole number from 1 to 100")
    dialog.get_by_test_id("execute-priority").fill("90")
    dialog.get_by_test_id("execute-confirm").click()
    expect(page).to_have_url(re.compile(r"/runs/[0-9a-f-]{36}$"))
    run_id = page.url.rsplit("/", 1)[-1]
    assert server.api("GET", f"/api/runs/{run_id}")["priority"] == 90
