"""Page object for the editor's workflow settings panel (title, timeouts, schedules, webhook)."""

from __future__ import annotations

from playwright.sync_api import Locator, Page, expect


class SettingsPanel:
    def __init__(self, page: Page) -> None:
        self.page = page
        self.root = page.get_by_test_id("settings-panel")

    def open(self, *, shortcut: bool = False) -> SettingsPanel:
        if shortcut:
            self.page.keyboard.press("Control+Comma")
        else:
            self.page.get_by_test_id("settings-button").click()
        expect(self.root).to_be_visible()
        return self

    def close(self) -> None:
        self.root.get_by_test_id("settings-close").click()
        expect(self.root).to_have_count(0)

    # -- schedules -----------------------------------------------------------------------------
    def add_schedule(self) -> int:
        index = self.root.locator('[data-testid^="schedule-"][data-testid$="-cron"]').count()
        self.root.get_by_test_id("schedule-add").click()
        expect(self.cron(index)).to_be_visible()
        return index

    def cron(self, index: int) -> Locator:
        return self.root.get_by_test_id(f"schedule-{index}-cron")

    def cron_error(self, index: int) -> Locator:
        return self.root.get_by_test_id(f"schedule-{index}-cron-error")

    def timezone(self, index: int) -> Locator:
        return self.root.get_by_test_id(f"schedule-{index}-timezone")

    def preview(self, index: int) -> Locator:
        return self.root.get_by_test_id(f"schedule-{index}-preview")

    def next_times(self, index: int) -> Locator:
        return self.preview(index).get_by_test_id("schedule-next-time")

    def set_input(self, index: int, text: str) -> None:
        editor = self.root.get_by_test_id(f"schedule-{index}-input").locator(".cm-content")
        editor.click()
        self.page.keyboard.press("Control+A")
        self.page.keyboard.press("Delete")
        # CodeMirror closes brackets as one types: insert the text as a paste instead.
        self.page.keyboard.insert_text(text)

    def input_text(self, index: int) -> Locator:
        return self.root.get_by_test_id(f"schedule-{index}-input").locator(".cm-content")

    # -- webhook -------------------------------------------------------------------------------
    @property
    def webhook(self) -> Locator:
        return self.root.get_by_test_id("webhook")

    def generate_secret(self) -> str:
        self.webhook.get_by_test_id("webhook-generate").click()
        secret = self.webhook.get_by_test_id("webhook-secret")
        expect(secret).not_to_have_value("")
        return secret.input_value()
