"""Issue 24 item 7: axe-core (the npm package, injected from frontend/node_modules) finds no serious or
critical violation on any page, in the light and the dark theme; colour contrast is one of its rules
(text ≥ 4.5:1). One test per theme visits every page, so the browser and the data are set up once."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from graphs import ORDER_TRIAGE
from pages.editor_page import EditorPage
from playwright.sync_api import Browser, Page, expect

from conftest import REPO, VIEWPORT, Server, shot

AXE = REPO / "frontend" / "node_modules" / "axe-core" / "axe.min.js"
BLOCKING = ("serious", "critical")

AUDIT = """async (blocking) => {
  const result = await window.axe.run(document, {resultTypes: ['violations']});
  return result.violations.filter(v => blocking.includes(v.impact)).map(v => ({
    rule: v.id, impact: v.impact, help: v.help,
    nodes: v.nodes.slice(0, 40).map(
      n => n.target.join(' ') + ' :: ' + (n.failureSummary || '').split('\\n').slice(1).join(' ')),
  }));
}"""


def audit(page: Page, name: str) -> list[dict[str, Any]]:
    """The serious and critical violations on the page as it is now, each tagged with the page's name."""
    if not page.evaluate("() => typeof window.axe === 'object'"):
        page.add_script_tag(path=str(AXE))
    found: list[dict[str, Any]] = page.evaluate(AUDIT, list(BLOCKING))
    return [{"page": name, **v} for v in found]


@pytest.fixture(scope="module")
def seeded(server: Server) -> Iterator[dict[str, str]]:
    """A workflow with two runs, a data source and a query, so lists and tables have rows."""
    wf = server.create_workflow({**ORDER_TRIAGE, "title": "Accessible triage"})
    server.api("POST", f"/api/workflows/{wf['id']}/runs", {"input": {"items": [1]}})
    run = server.api("POST", f"/api/workflows/{wf['id']}/runs", {"input": {"items": [1, 2, 3]}})
    source = server.api(
        "POST",
        "/api/data-sources",
        {"name": "A11y source", "kind": "http", "config": {"baseUrl": "https://example.com"}},
    )
    waiting = server.create_workflow(
        {
            "title": "Accessible approval",
            "nodes": [
                {"id": "start", "type": "start", "label": "Start"},
                {
                    "id": "ok",
                    "type": "wait",
                    "label": "Manager approves",
                    "config": {"resumeOn": "approval", "allowSelfApproval": True},
                },
                {"id": "end", "type": "end", "label": "End"},
            ],
            "edges": [
                {"id": "e1", "source": "start", "target": "ok"},
                {"id": "e2", "source": "ok", "target": "end", "sourceHandle": "success"},
            ],
            "options": {"timeoutSeconds": 86_400},
        }
    )
    pending = server.api("POST", f"/api/workflows/{waiting['id']}/runs", {"input": {}})  # an Approvals card
    yield {"workflow": wf["id"], "run": run["instanceId"], "source": source["id"]}
    server.api("POST", f"/api/runs/{pending['instanceId']}/cancel")  # other tests count the approvals waiting


@pytest.mark.parametrize("theme", ["light", "dark"])
def test_no_serious_or_critical_axe_violation_on_any_page(
    page: Page, browser: Browser, server: Server, seeded: dict[str, str], theme: str
) -> None:
    page.emulate_media(color_scheme=theme)  # the app follows the system theme unless the user picked one
    violations: list[dict[str, Any]] = []

    def visit(path: str, ready: str, name: str) -> None:
        page.goto(path)
        expect(page.locator("html")).to_have_attribute("data-theme", theme)
        expect(page.get_by_test_id(ready).first).to_be_visible()
        violations.extend(audit(page, name))

    visit("/", "workflow-list-page", "workflows")
    EditorPage(page).open(seeded["workflow"])
    EditorPage(page).select("score")  # the inspector is open, with its labels
    violations.extend(audit(page, "editor"))
    page.locator(".react-flow__edge").first.click()
    page.get_by_test_id("edge-insert").click()
    expect(page.get_by_test_id("node-picker")).to_be_visible()
    violations.extend(audit(page, "editor, node picker"))
    shot(page, f"a11y-editor-{theme}")
    page.keyboard.press("Escape")
    visit("/runs", "run-table", "runs")
    if theme == "dark":  # the white row separators: a divider darker than the text it separates
        divider = (
            page.locator('[data-testid="run-table"] tbody tr')
            .first.locator("td")
            .first.evaluate("td => getComputedStyle(td).borderBottomColor")
        )
        assert divider == "rgb(38, 44, 55)", divider
    page.goto(f"/runs/{seeded['run']}")
    expect(page.get_by_test_id("run-detail")).to_have_attribute("data-status", "COMPLETED", timeout=20_000)
    violations.extend(audit(page, "run detail"))
    visit("/data-sources", "data-sources-page", "data sources")
    visit(f"/data-sources/{seeded['source']}", "data-source-page", "data source")
    visit("/queries", "queries-page", "queries")
    visit("/settings", "settings-page", "settings")
    visit("/account", "account-page", "account")
    visit("/approvals", "approval-card", "approvals")

    signed_out = browser.new_context(base_url=server.url, viewport=VIEWPORT, color_scheme=theme)  # type: ignore[arg-type]
    try:
        login = signed_out.new_page()
        login.goto("/login")
        expect(login.get_by_test_id("login-form")).to_be_visible()
        violations.extend(audit(login, "login"))
    finally:
        signed_out.close()

    assert violations == [], json.dumps(violations, indent=2)
