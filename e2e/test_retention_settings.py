"""The Settings page (issue 22): a tenant's run retention is read, a bad value is refused on its field, a
good one is saved and read back after a reload, and "Use the server defaults" goes back to them."""

from __future__ import annotations

from pages.data_pages import AccountPage
from playwright.sync_api import Page, expect

from conftest import Server, shot


def test_retention_is_read_checked_saved_and_reset(page: Page, server: Server) -> None:
    page.goto("/")
    page.get_by_test_id("nav-settings").click()
    expect(page.get_by_test_id("settings-page")).to_be_visible()
    days, test_days, max_runs = (
        page.get_by_test_id(name) for name in ("retention-days", "retention-test-days", "retention-max-runs")
    )
    expect(days).to_have_value("30")  # the server's defaults (FLOWDECK_RETENTION_*)
    expect(test_days).to_have_value("7")
    expect(max_runs).to_have_value("100000")
    expect(page.get_by_test_id("retention-source")).to_contain_text("server defaults")

    form = AccountPage(page)  # the same field layout: the error sits on the field
    days.fill("-5")
    page.get_by_test_id("retention-save").click()
    expect(form.field_error("retention-days")).to_contain_text(">= 0")
    expect(form.field_error("retention-max-runs")).to_have_count(0)
    assert server.api("GET", "/api/settings/retention")["custom"] is False  # nothing was stored

    days.fill("90")
    test_days.fill("0")
    max_runs.fill("5000")
    page.get_by_test_id("retention-save").click()
    expect(page.get_by_test_id("toast").filter(has_text="Retention saved")).to_be_visible()
    expect(form.field_error("retention-days")).to_have_count(0)  # the error is cleared
    shot(page, "settings-retention")
    stored = server.api("GET", "/api/settings/retention")
    assert (stored["maxAgeDays"], stored["testMaxAgeDays"], stored["maxRuns"], stored["custom"]) == (90, 0, 5000, True)

    page.reload()
    expect(days).to_have_value("90")
    expect(test_days).to_have_value("0")
    expect(page.get_by_test_id("retention-source")).to_contain_text("own policy")

    page.get_by_test_id("retention-reset").click()
    expect(days).to_have_value("30")
    expect(page.get_by_test_id("retention-source")).to_contain_text("server defaults")
    assert server.api("GET", "/api/settings/retention")["custom"] is False
