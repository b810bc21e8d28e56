"""Workflow settings in the editor: description and timeouts through undo, schedules (cron checked in the
browser, next run times, saved and read back), and the webhook: a secret generated in the panel, then
called from outside with httpx and found in the run history."""

from __future__ import annotations

import re

import httpx
from graphs import chain
from pages.editor_page import EditorPage
from pages.settings_panel import SettingsPanel
from playwright.sync_api import Page, expect

from conftest import Server, shot


def test_settings_schedules_are_checked_previewed_saved_and_reloaded(page: Page, server: Server) -> None:
    wf = server.create_workflow(chain("Nightly import"))
    editor = EditorPage(page).open(wf["id"])

    # the shortcut is in the help overlay, and opens the panel
    page.keyboard.press("Shift+?")
    expect(page.get_by_test_id("shortcut-settings")).to_contain_text("Ctrl+,")
    page.keyboard.press("Escape")
    settings = SettingsPanel(page).open(shortcut=True)

    # description and run timeout are edits like any other: unsaved, and undone with Ctrl+Z
    settings.root.get_by_test_id("settings-description").fill("Imports the orders every weekday morning")
    settings.root.get_by_test_id("settings-timeout").fill("120")
    expect(settings.root).to_contain_text("2 min")
    expect(page.get_by_test_id("unsaved-indicator")).to_be_visible()
    settings.root.locator(".inspector__head").click()  # out of the field: Ctrl+Z is the editor's again
    page.keyboard.press("Control+z")
    expect(settings.root.get_by_test_id("settings-timeout")).to_have_value("")
    page.keyboard.press("Control+Shift+z")
    expect(settings.root.get_by_test_id("settings-timeout")).to_have_value("120")

    # a bad cron: the error is on the field, and there is no preview
    row = settings.add_schedule()
    settings.cron(row).fill("61 6 * * 1-5")
    expect(settings.cron_error(row)).to_have_text(re.compile(r"^minute: 61 is out of range 0.59$"))
    expect(settings.preview(row)).to_have_count(0)
    settings.timezone(row).fill("Europe/Pariss")
    expect(settings.root.get_by_test_id(f"schedule-{row}-timezone-error")).to_contain_text("not an IANA time zone")

    # fixed: the next three run times, in the schedule's zone
    settings.cron(row).fill("30 6 * * 1-5")
    settings.timezone(row).fill("Europe/Paris")
    expect(settings.cron_error(row)).to_have_count(0)
    expect(settings.next_times(row)).to_have_count(3)
    expect(settings.next_times(row).first).to_contain_text(re.compile(r"^(Mon|Tue|Wed|Thu|Fri) .*, 06:30"))
    expect(settings.preview(row)).to_contain_text("Europe/Paris")
    settings.set_input(row, '{"source": "schedule", "n": 3}')
    # the server's validation agrees (no problem about the schedule)
    expect(page.get_by_test_id("problem-count")).to_have_text("0", timeout=5000)
    shot(page, "settings-schedules")

    editor.save()
    editor.expect_version(2)
    expect(page.get_by_test_id("unsaved-indicator")).to_have_count(0)

    # read back through the API
    saved = server.api("GET", f"/api/workflows/{wf['id']}")
    assert saved["description"] == "Imports the orders every weekday morning"
    assert saved["options"]["timeoutSeconds"] == 120
    (schedule,) = saved["options"]["schedules"]
    assert schedule["cron"] == "30 6 * * 1-5"
    assert schedule["timezone"] == "Europe/Paris"
    assert schedule["input"] == {"source": "schedule", "n": 3}

    # and after a reload, in the panel
    page.reload()
    expect(page.get_by_test_id("editor")).to_have_attribute("data-loaded", "true")
    settings = SettingsPanel(page).open()
    expect(settings.cron(0)).to_have_value("30 6 * * 1-5")
    expect(settings.timezone(0)).to_have_value("Europe/Paris")
    expect(settings.input_text(0)).to_contain_text('"source": "schedule"')
    expect(settings.next_times(0)).to_have_count(3)
    description = settings.root.get_by_test_id("settings-description")
    expect(description).to_have_value("Imports the orders every weekday morning")

    # removing the schedule is one more unsaved edit
    settings.root.get_by_test_id("schedule-0-remove").click()
    expect(settings.cron(0)).to_have_count(0)
    expect(page.get_by_test_id("unsaved-indicator")).to_be_visible()
    # opening a node swaps the panel for the node's
    editor.select("end")
    expect(settings.root).to_have_count(0)


def test_webhook_secret_from_the_panel_starts_a_run_from_outside(page: Page, server: Server) -> None:
    wf = server.create_workflow(chain("Hooked", end_params={"got": "{{ ctx.input.n }}"}))
    EditorPage(page).open(wf["id"])
    settings = SettingsPanel(page).open()
    expect(settings.webhook).to_have_attribute("data-state", "ready")
    expect(settings.webhook.get_by_test_id("webhook-url")).to_have_value(f"{server.url}/hooks/{wf['id']}")
    expect(settings.webhook.get_by_test_id("webhook-secret-status")).to_contain_text("No secret yet")

    secret = settings.generate_secret()
    assert len(secret) >= 16
    curl = settings.webhook.get_by_test_id("webhook-curl")
    expect(curl).to_have_value(re.compile(re.escape(f"X-Flowdeck-Secret: {secret}")))
    expect(curl).to_have_value(re.compile(re.escape(f"{server.url}/hooks/{wf['id']}?wait=30")))
    expect(settings.webhook.get_by_test_id("webhook-rotate")).to_be_visible()
    shot(page, "settings-webhook")

    # a wrong secret is refused, the right one runs the workflow and (with ?wait) answers its output
    url = f"{server.url}/hooks/{wf['id']}"
    refused = httpx.post(url, headers={"X-Flowdeck-Secret": "not-the-secret"}, json={"n": 1}, timeout=15)
    assert refused.status_code == 401, refused.text
    answer = httpx.post(url, params={"wait": 10}, headers={"X-Flowdeck-Secret": secret}, json={"n": 5}, timeout=20)
    assert answer.status_code == 200, answer.text
    body = answer.json()
    assert body["status"] == "COMPLETED"
    assert str(body["output"]["got"]) == "5"
    run_id = body["instanceId"]

    # the run is in the run history, as a production run started by the webhook
    page.goto(f"/runs?workflowId={wf['id']}")
    row = page.locator(f'[data-testid="run-row"][data-id="{run_id}"]')
    expect(row).to_have_attribute("data-status", "COMPLETED")
    expect(row).to_contain_text("webhook")
    detail = server.api("GET", f"/api/runs/{run_id}")
    assert detail["isTest"] is False
    assert detail["input"] == {"n": 5}

    # the panel now shows when the secret was last used; rotating asks first and shows a new one
    EditorPage(page).open(wf["id"])
    settings = SettingsPanel(page).open()
    expect(settings.webhook.get_by_test_id("webhook-secret-status")).not_to_contain_text("last used never")
    expect(settings.webhook.get_by_test_id("webhook-secret")).to_have_count(0)  # shown once only
    settings.webhook.get_by_test_id("webhook-rotate").click()
    settings.webhook.get_by_test_id("webhook-rotate-confirm").click()
    new_secret = settings.webhook.get_by_test_id("webhook-secret")
    expect(new_secret).not_to_have_value("")
    assert new_secret.input_value() != secret
    old = httpx.post(url, headers={"X-Flowdeck-Secret": secret}, json={}, timeout=15)
    assert old.status_code == 401, old.text
