"""Data sources, saved queries and the Data query node, clicked through as a user would (issue 13.1)."""

from __future__ import annotations

import re
import sqlite3

from graphs import edge, node
from pages.data_pages import DataSourcesPage, QueriesPage
from pages.editor_page import EditorPage
from playwright.sync_api import Page, expect

from conftest import Server, shot


def _orders_file(server: Server, name: str) -> str:
    assert server.sqlite_dir is not None
    path = server.sqlite_dir / name
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE orders (id INTEGER PRIMARY KEY, customer TEXT, total REAL)")
        conn.executemany(
            "INSERT INTO orders (customer, total) VALUES (?, ?)", [("ann", 12.5), ("bob", 40.0), ("ann", 3.0)]
        )
    conn.close()
    return f"sqlite+aiosqlite:///{path}"


def test_a_sqlite_source_a_query_with_a_parameter_and_a_data_query_node(page: Page, server: Server) -> None:
    url = _orders_file(server, "shop.db")
    page.goto("/")
    sources = DataSourcesPage(page).open_from_nav()

    # A new SQL data source: a bad URL is refused on its field, then the connection is tested.
    page.get_by_test_id("source-new").click()
    page.get_by_test_id("source-name").fill("Shop")
    page.get_by_test_id("source-url").fill("not a database url")
    page.get_by_test_id("source-save").click()
    expect(sources.field_error("source-url")).to_contain_text("database URL")
    page.get_by_test_id("source-url").fill(url)
    page.get_by_test_id("connection-test").click()
    expect(page.get_by_test_id("connection-result")).to_have_attribute("data-ok", "true")
    expect(page.get_by_test_id("connection-result")).to_contain_text("connected")
    page.get_by_test_id("source-save").click()
    expect(page).to_have_url(re.compile(r"/data-sources/[0-9a-f-]{36}$"))
    page.get_by_test_id("connection-test").click()  # the saved source, tested with what is stored
    expect(page.get_by_test_id("connection-result")).to_have_attribute("data-ok", "true")
    shot(page, "data-source")
    sources.open_from_nav()
    expect(sources.row("Shop")).to_contain_text("SQL")

    # A saved query with a parameter, tried on its page: the result is a table.
    queries = QueriesPage(page).open_from_nav()
    page.get_by_test_id("query-new").click()
    page.get_by_test_id("query-name").fill("Orders of a customer")
    # Other tests' sources may come first in the list (the form picks the first): pick ours.
    page.get_by_test_id("query-source").select_option(label="Shop (SQL)")
    page.get_by_test_id("query-sql").fill("SELECT id, total FROM orders WHERE customer = :customer ORDER BY id")
    expect(page.get_by_test_id("query-parameters")).to_have_value("customer")
    page.get_by_test_id("query-parameters").fill("customer, extra")
    page.get_by_test_id("query-save").click()
    expect(queries.field_error("query-parameters")).to_contain_text("extra")  # the API names the field
    page.get_by_test_id("query-parameters").fill("customer")
    page.get_by_test_id("query-save").click()
    expect(page).to_have_url(re.compile(r"/queries/[0-9a-f-]{36}$"))
    page.get_by_test_id("try-arg-customer").fill("ann")
    page.get_by_test_id("query-run").click()
    expect(page.get_by_test_id("result-row")).to_have_count(2)
    expect(page.get_by_test_id("result-table").locator("th")).to_have_text(["id", "total"])
    expect(page.get_by_test_id("result-row").first).to_contain_text("12.5")
    shot(page, "saved-query-try")

    # A workflow whose Data query node points at a query that does not exist: pick the new one.
    wf = server.create_workflow(
        {
            "title": "Orders of a customer",
            "nodes": [
                node("start", "start", 0),
                node("orders", "dataQuery", 280, config={"queryId": "gone", "args": {}}),
                node("end", "end", 560, config={"outputParameters": {"count": "{{ ctx.orders.rowCount }}"}}),
            ],
            "edges": [edge("start", "orders"), edge("orders", "end", "success")],
        }
    )
    editor = EditorPage(page).open(wf["id"])
    editor.select("orders")
    expect(page.get_by_test_id("query-missing")).to_contain_text("gone")
    page.get_by_test_id("query-search").fill("customer")
    expect(page.get_by_test_id("query-option")).to_have_count(1)
    page.get_by_test_id("query-search").press("Enter")
    expect(page.get_by_test_id("query-chosen")).to_contain_text("Orders of a customer")
    page.get_by_test_id("query-arg-customer").fill("{{ ctx.input.customer }}")
    editor.set_test_input('{"customer": "ann"}')
    editor.test_run()
    editor.expect_run_status("COMPLETED")
    editor.expect_status("orders", "COMPLETED")
    page.get_by_test_id("tab-run-data").click()
    expect(page.get_by_test_id("inspector")).to_contain_text('"rowCount": 2')
    shot(page, "data-query-node")


def test_a_new_query_written_inside_the_data_query_node(page: Page, server: Server) -> None:
    url = _orders_file(server, "inline.db")
    server.api("POST", "/api/data-sources", {"name": "Inline shop", "kind": "sql", "config": {"url": url}})
    wf = server.create_workflow(
        {
            "title": "Inline query",
            "nodes": [
                node("start", "start", 0),
                node("totals", "dataQuery", 280, config={"queryId": "none-yet", "args": {}}),
                node("end", "end", 560, config={"outputParameters": {"rows": "{{ ctx.totals.rows }}"}}),
            ],
            "edges": [edge("start", "totals"), edge("totals", "end", "success")],
        }
    )
    editor = EditorPage(page).open(wf["id"])
    editor.select("totals")
    page.get_by_test_id("query-new-inline").click()
    inline = page.get_by_test_id("inline-query")
    inline.get_by_test_id("query-name").fill("Big orders (inline)")
    inline.get_by_test_id("query-source").select_option(label="Inline shop (SQL)")
    inline.get_by_test_id("query-sql").fill("SELECT customer FROM orders WHERE total > :minimum")
    inline.get_by_test_id("query-save").click()
    expect(page.get_by_test_id("query-chosen")).to_contain_text("Big orders (inline)")
    page.get_by_test_id("query-arg-minimum").fill("20")
    editor.test_run()
    editor.expect_run_status("COMPLETED")
    editor.expect_status("totals", "COMPLETED")
    editor.select("totals")
    page.get_by_test_id("tab-run-data").click()
    expect(page.get_by_test_id("inspector")).to_contain_text('"customer": "bob"')


def test_deleting_a_data_source_in_use_says_why_and_keeps_it(page: Page, server: Server) -> None:
    url = _orders_file(server, "kept.db")
    source = server.api("POST", "/api/data-sources", {"name": "Kept", "kind": "sql", "config": {"url": url}})
    server.api(
        "POST",
        "/api/queries",
        {"name": "Uses kept", "dataSourceId": source["id"], "parameters": [], "sql": "SELECT 1"},
    )
    page.goto("/data-sources")
    sources = DataSourcesPage(page)
    sources.row("Kept").get_by_test_id("source-delete").click()
    page.get_by_test_id("confirm-ok").click()
    expect(page.get_by_test_id("toast").filter(has_text="Could not delete")).to_contain_text("Uses kept")
    page.reload()
    expect(sources.row("Kept")).to_be_visible()


def test_an_http_source_keeps_its_secret_write_only_and_sources_and_queries_are_edited_and_deleted(
    page: Page, server: Server
) -> None:
    page.goto("/data-sources/new")
    sources = DataSourcesPage(page)
    page.get_by_test_id("source-name").fill("CRM")
    page.get_by_test_id("source-kind").select_option("http")
    page.get_by_test_id("source-base-url").fill("https://crm.example.test/v1")
    page.get_by_test_id("secret-add").click()
    page.get_by_label("Secret header name").fill("Authorization")
    page.get_by_test_id("secret-value").fill("Bearer top-s3cret")
    page.get_by_test_id("source-save").click()
    expect(page).to_have_url(re.compile(r"/data-sources/[0-9a-f-]{36}$"))

    # After saving, the secret is "set": no field holds it and the page never contains it.
    page.reload()
    expect(page.get_by_test_id("secret-set")).to_have_text("set")
    expect(page.get_by_test_id("secret-value")).to_have_count(0)
    assert "top-s3cret" not in page.content()
    page.get_by_test_id("source-name").fill("CRM (EU)")
    page.get_by_test_id("source-save").click()
    expect(page.get_by_test_id("toast").filter(has_text="CRM (EU)")).to_be_visible()
    stored = server.api("GET", page.url.replace(server.url, "/api"))
    assert stored["name"] == "CRM (EU)" and stored["secrets"] == {"Authorization": "set"}  # kept, not re-sent

    page.get_by_test_id("secret-replace").click()
    page.get_by_test_id("secret-value").fill("Bearer rotated")
    page.get_by_test_id("source-save").click()
    expect(page.get_by_test_id("secret-set")).to_be_visible()
    shot(page, "http-data-source")

    # A query on it: edit, then delete; then the source itself.
    source_id = stored["id"]
    query = server.api(
        "POST",
        "/api/queries",
        {"name": "Contacts", "dataSourceId": source_id, "parameters": [], "method": "GET", "path": "contacts"},
    )
    page.goto("/queries")
    page.get_by_test_id("query-search").fill("Contacts")
    page.get_by_test_id("query-open").click()
    expect(page.get_by_test_id("query-path")).to_have_value("contacts")
    page.get_by_test_id("query-path").fill("contacts/{{ id }}")
    expect(page.get_by_test_id("query-parameters")).to_have_value("")  # edited queries keep their list...
    page.get_by_test_id("query-parameters").fill("id")  # ...until the user changes it
    page.get_by_test_id("query-save").click()
    expect(page.get_by_test_id("try-arg-id")).to_be_visible()
    assert server.api("GET", f"/api/queries/{query['id']}")["path"] == "contacts/{{ id }}"

    page.goto("/queries")
    row = page.get_by_test_id("query-row").and_(page.locator('[data-name="Contacts"]'))
    row.get_by_test_id("query-delete").click()
    page.get_by_test_id("confirm-ok").click()
    expect(row).to_have_count(0)

    page.goto("/data-sources")
    sources.row("CRM (EU)").get_by_test_id("source-delete").click()
    page.get_by_test_id("confirm-ok").click()
    expect(sources.row("CRM (EU)")).to_have_count(0)
