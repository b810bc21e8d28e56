"""Runs: a test run from a saved workflow's editor is filed under that workflow (marked as a test); the
history's date range and run-id search; dates on older times; the last test run survives a reload."""

from __future__ import annotations

import re
import sqlite3
import time
from collections.abc import Iterator
from datetime import datetime, timedelta

import pytest
from graphs import chain
from pages.editor_page import EditorPage
from playwright.sync_api import Page, expect

from conftest import Server, shot


def _sqlite_file(server: Server) -> str:
    return server.env["FLOWDECK_DATABASE_URL"].removeprefix("sqlite+aiosqlite:///")


def _wait_finished(server: Server, run_id: str) -> None:
    for _ in range(100):
        if server.api("GET", f"/api/runs/{run_id}")["status"] == "COMPLETED":
            return
        time.sleep(0.1)
    raise AssertionError(f"run {run_id} did not complete")


def test_a_test_run_is_found_under_its_workflow_and_by_its_id(page: Page, server: Server) -> None:
    wf = server.create_workflow(chain("History of tests", ("one", "return {'n': 1}")))
    editor = EditorPage(page).open(wf["id"])
    editor.test_run()
    editor.expect_run_status("COMPLETED")
    run_id = page.get_by_test_id("run-panel").get_attribute("data-run-id")
    assert run_id

    page.get_by_test_id("runs-link").click()
    rows = page.get_by_test_id("run-row")
    expect(rows).to_have_count(1)
    expect(rows.first).to_have_attribute("data-id", run_id)
    expect(rows.first).to_contain_text("History of tests")
    expect(rows.first.locator(".pill--test")).to_have_text("test")
    page.get_by_test_id("filter-kind-production").click()
    expect(page.get_by_text("No runs match these filters.")).to_be_visible()
    page.get_by_test_id("filter-kind-all").click()
    expect(rows).to_have_count(1)

    page.get_by_test_id("filter-workflow").select_option("")  # all workflows, then search by id
    page.get_by_test_id("filter-run-id").fill(run_id[:8])
    expect(rows).to_have_count(1)
    expect(rows.first).to_have_attribute("data-id", run_id)
    page.get_by_test_id("filter-run-id").fill("zzzz")
    expect(page.get_by_text("No runs match these filters.")).to_be_visible()
    page.get_by_test_id("filter-run-id").fill("not an id!")
    expect(page.get_by_test_id("filter-error")).to_contain_text("letters, digits")
    shot(page, "run-history-id-search")


@pytest.fixture
def kept_forever(server: Server) -> Iterator[None]:
    """The tenant keeps every run while the test backdates one past the server's 30 days: the pruner, about
    once a minute, would delete it mid-test."""
    server.api("PUT", "/api/settings/retention", {"maxAgeDays": 0, "testMaxAgeDays": 0, "maxRuns": 0})
    try:
        yield
    finally:
        server.api("DELETE", "/api/settings/retention")


@pytest.mark.usefixtures("kept_forever")
def test_the_date_range_filter_and_dates_on_older_runs(page: Page, server: Server) -> None:
    wf = server.create_workflow(chain("Old and new", ("one", "return {'n': 1}")))
    old_run = server.api("POST", f"/api/workflows/{wf['id']}/runs", {"input": {}})["instanceId"]
    new_run = server.api("POST", f"/api/workflows/{wf['id']}/runs", {"input": {}})["instanceId"]
    for run_id in (old_run, new_run):
        _wait_finished(server, run_id)
    today = datetime.now().astimezone().date()  # the browser's day: same machine, same time zone
    long_ago = today.replace(year=today.year - 1, month=6, day=15)
    at = time.mktime(long_ago.timetuple()) + 9 * 3600  # 09:00 local time, a year ago
    with sqlite3.connect(_sqlite_file(server), timeout=10) as db:  # the run as if it had run then
        db.execute(
            "UPDATE instances SET created_at = ?, started_at = ?, completed_at = ? WHERE id = ?",
            (at, at, at + 1, old_run),
        )
    db.close()

    page.goto(f"/runs?workflowId={wf['id']}")
    rows = page.get_by_test_id("run-row")
    expect(rows).to_have_count(2)
    old_row = page.locator(f'[data-testid="run-row"][data-id="{old_run}"]')
    expect(old_row.get_by_test_id("run-started")).to_contain_text(str(long_ago.year))
    expect(old_row.get_by_test_id("run-started")).to_contain_text("15")
    new_started = page.locator(f'[data-testid="run-row"][data-id="{new_run}"]').get_by_test_id("run-started")
    expect(new_started).not_to_contain_text(str(today.year))  # this year: no year, but the date all the same
    expect(new_started).to_contain_text(re.compile(rf"\b{today.day}\b"))

    page.get_by_test_id("filter-from").fill(long_ago.isoformat())
    page.get_by_test_id("filter-to").fill(long_ago.isoformat())
    expect(rows).to_have_count(1)
    expect(rows.first).to_have_attribute("data-id", old_run)
    page.get_by_test_id("filter-from").fill(today.isoformat())
    page.get_by_test_id("filter-to").fill((today + timedelta(days=1)).isoformat())
    expect(rows).to_have_count(1)
    expect(rows.first).to_have_attribute("data-id", new_run)
    page.get_by_test_id("filter-to").fill((today - timedelta(days=2)).isoformat())
    expect(page.get_by_test_id("filter-error")).to_contain_text("after the last day")
    page.get_by_test_id("filter-clear").click()
    expect(rows).to_have_count(2)
    shot(page, "run-history-dates")


def test_the_last_test_run_survives_a_reload(page: Page, server: Server) -> None:
    wf = server.create_workflow(
        chain("Reload me", ("answer", "return {'value': 42}"), end_params={"v": "{{ ctx.answer.value }}"})
    )
    editor = EditorPage(page).open(wf["id"])
    editor.test_run()
    editor.expect_run_status("COMPLETED")
    run_id = page.get_by_test_id("run-panel").get_attribute("data-run-id")

    page.reload()
    expect(page.get_by_test_id("editor")).to_have_attribute("data-loaded", "true")
    editor.expect_run_status("COMPLETED")
    expect(page.get_by_test_id("run-panel")).to_have_attribute("data-run-id", run_id or "")
    editor.expect_status("answer", "COMPLETED")
    editor.select("answer")
    page.get_by_test_id("tab-run-data").click()
    expect(page.get_by_test_id("inspector")).to_contain_text("42")


def test_runs_are_found_by_their_labels(page: Page, server: Server) -> None:
    wf = server.create_workflow(chain("Labelled runs", ("one", "ctx.label('step', 'one')\nreturn {'n': 1}")))
    acme = server.api("POST", f"/api/workflows/{wf['id']}/runs", {"labels": {"customer": "acme", "region": "eu"}})
    globex = server.api("POST", f"/api/workflows/{wf['id']}/runs", {"labels": {"customer": "globex"}})
    for run in (acme, globex):
        _wait_finished(server, run["instanceId"])

    page.goto(f"/runs?workflowId={wf['id']}")
    rows = page.get_by_test_id("run-row")
    expect(rows).to_have_count(2)
    expect(page.get_by_test_id("run-count")).to_have_text("2 runs")
    acme_row = page.locator(f'[data-testid="run-row"][data-id="{acme["instanceId"]}"]')
    expect(acme_row.get_by_test_id("run-labels")).to_contain_text("customer=acme")
    expect(acme_row.get_by_test_id("run-labels")).to_contain_text("step=one")  # set by the python node

    page.get_by_test_id("filter-labels").fill("customer=acme region=eu")
    expect(rows).to_have_count(1)
    expect(page.get_by_test_id("run-count")).to_have_text("1 run")
    expect(rows.first).to_have_attribute("data-id", acme["instanceId"])
    page.get_by_test_id("filter-labels").fill("customer=nobody")
    expect(page.get_by_text("No runs match these filters.")).to_be_visible()
    page.get_by_test_id("filter-labels").fill("customer")
    expect(page.get_by_test_id("filter-error")).to_contain_text("name=value")
    shot(page, "run-history-labels")

    page.goto(f"/runs/{globex['instanceId']}")
    page.get_by_test_id("run-label").filter(has_text="customer=globex").click()
    expect(page.get_by_test_id("filter-labels")).to_have_value("customer=globex")
    expect(rows).to_have_count(1)
    expect(rows.first).to_have_attribute("data-id", globex["instanceId"])
