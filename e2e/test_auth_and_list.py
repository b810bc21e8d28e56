"""Login screen and the workflow list (create, search, rename, duplicate, delete)."""

from __future__ import annotations

from playwright.sync_api import Browser, Page, expect

from conftest import EMAIL, PASSWORD, VIEWPORT, Server, shot


def test_login_refuses_a_wrong_password_then_signs_in(browser: Browser, server: Server) -> None:
    context = browser.new_context(viewport=VIEWPORT, base_url=server.url)
    page = context.new_page()
    page.goto("/workflows/anything")
    expect(page.get_by_test_id("login-form")).to_be_visible()
    page.get_by_test_id("login-email").fill(EMAIL)
    page.get_by_test_id("login-password").fill("not-the-password")
    page.get_by_test_id("login-submit").click()
    expect(page.get_by_test_id("login-error")).to_contain_text("Wrong email or password")
    shot(page, "login")
    page.get_by_test_id("login-password").fill(PASSWORD)
    page.get_by_test_id("login-submit").click()
    # back to where the user was going (an unknown workflow: the editor says so)
    expect(page).to_have_url(f"{server.url}/workflows/anything")
    expect(page.get_by_test_id("current-user")).to_contain_text(EMAIL)
    context.close()


def test_workflow_list_create_search_rename_duplicate_delete(page: Page, server: Server) -> None:
    server.create_workflow({"title": "Zebra report", "nodes": [], "edges": []} | _starter())
    page.goto("/")
    page.get_by_test_id("new-workflow").click()
    page.get_by_test_id("name-input").fill("Invoice sync")
    page.get_by_test_id("name-confirm").click()
    expect(page.get_by_test_id("editor")).to_have_attribute("data-loaded", "true")
    expect(page.get_by_test_id("workflow-title")).to_have_value("Invoice sync")
    expect(page.locator(".react-flow__node")).to_have_count(2)

    page.get_by_test_id("nav-workflows").click()
    rows = page.get_by_test_id("workflow-row")
    page.get_by_test_id("workflow-search").fill("invoice")
    expect(rows).to_have_count(1)
    row = rows.first
    row.get_by_test_id("workflow-rename").click()
    page.get_by_test_id("name-input").fill("Invoice sync (nightly)")
    page.get_by_test_id("name-confirm").click()
    expect(row).to_contain_text("Invoice sync (nightly)")
    expect(row).to_contain_text("v2")

    row.get_by_test_id("workflow-duplicate").click()
    expect(rows).to_have_count(2)
    expect(rows.filter(has_text="Copy of Invoice sync (nightly)")).to_have_count(1)
    shot(page, "workflow-list")

    rows.filter(has_text="Copy of").get_by_test_id("workflow-delete").click()
    page.get_by_test_id("confirm-ok").click()
    expect(rows).to_have_count(1)
    page.get_by_test_id("workflow-search").fill("")
    expect(rows.filter(has_text="Zebra report")).to_have_count(1)


def _starter() -> dict[str, object]:
    return {
        "nodes": [
            {"id": "start", "type": "start", "position": {"x": 0, "y": 0}, "config": {}},
            {"id": "end", "type": "end", "position": {"x": 300, "y": 0}, "config": {"outputParameters": {}}},
        ],
        "edges": [{"id": "e1", "source": "start", "target": "end", "sourceHandle": "default"}],
    }
