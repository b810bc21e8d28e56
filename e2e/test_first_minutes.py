"""The first five minutes: an empty list offers runnable examples and JSON import; export and import of workflow
JSON from the list and the editor; /schema without internet."""

from __future__ import annotations

import json
import re
import uuid
from pathlib import Path
from typing import Any

from graphs import chain
from pages.editor_page import EditorPage
from playwright.sync_api import Browser, Page, Request, Route, expect

from conftest import PASSWORD, VIEWPORT, Server, shot


def _sign_in_as_newcomer(browser: Browser, server: Server) -> Page:
    email = f"newcomer-{uuid.uuid4().hex[:8]}@example.com"
    server.add_user(email, f"fresh-{uuid.uuid4().hex[:8]}")
    context = browser.new_context(viewport=VIEWPORT, base_url=server.url)
    page = context.new_page()
    page.set_default_timeout(10_000)
    page.goto("/login")
    page.get_by_test_id("login-email").fill(email)
    page.get_by_test_id("login-password").fill(PASSWORD)
    page.get_by_test_id("login-submit").click()
    expect(page.get_by_test_id("workflow-list-page")).to_be_visible()
    return page


def _run_example(page: Page, example_id: str, expected_output: str) -> None:
    page.get_by_test_id(f"example-start-{example_id}").click()
    editor = EditorPage(page)
    expect(page.get_by_test_id("editor")).to_have_attribute("data-loaded", "true")
    editor.test_run()
    editor.expect_run_status("COMPLETED")
    expect(page.get_by_test_id("run-panel")).to_contain_text(expected_output)


def test_an_empty_list_offers_examples_that_run_and_json_import(browser: Browser, server: Server) -> None:
    page = _sign_in_as_newcomer(browser, server)
    empty = page.get_by_test_id("empty-list")
    expect(empty.get_by_test_id("example")).to_have_count(3)
    expect(empty.get_by_test_id("empty-import")).to_be_visible()
    shot(page, "empty-list-examples")

    _run_example(page, "data-query", "Linus")  # the saved query read the shipped SQLite file
    EditorPage(page).expect_status("orders", "COMPLETED")
    shot(page, "example-data-query-run")

    for example_id, output in (("loop", '"square": 16'), ("condition-delay", "approved after a pause")):
        page.get_by_test_id("nav-workflows").click()
        page.get_by_test_id("new-workflow").click()
        _run_example(page, example_id, output)
    page.get_by_test_id("nav-workflows").click()
    expect(page.get_by_test_id("workflow-row")).to_have_count(3)
    page.context.close()


def test_export_and_import_from_the_list_with_clear_errors(page: Page, server: Server, tmp_path: Path) -> None:
    title = f"Exported {uuid.uuid4().hex[:6]}"
    wf = server.create_workflow(
        chain(title, ("double", "return {'v': 2 * 21}"), end_params={"v": "{{ ctx.double.v }}"})
    )
    page.goto("/")
    row = page.get_by_test_id("workflow-row").filter(has_text=title)
    with page.expect_download() as download:
        row.get_by_test_id("workflow-export").click()
    assert download.value.suggested_filename == f"{title.lower().replace(' ', '-')}.json"
    exported: dict[str, Any] = json.loads(Path(download.value.path()).read_text())
    assert set(exported) == {"title", "nodes", "edges", "notes"} and exported["nodes"] == wf["nodes"]
    assert exported["notes"] == []  # the definition's sticky notes (none here) travel with it

    page.get_by_test_id("import-workflow").click()
    dialog = page.get_by_test_id("import-dialog")
    dialog.get_by_test_id("import-text").fill('{\n  "title": "Broken",\n  "nodes": [,]\n}')
    dialog.get_by_test_id("import-confirm").click()
    expect(dialog.get_by_test_id("import-error")).to_contain_text("not valid JSON (at line 3, column 13)")

    cyclic = {
        **exported,
        "title": "Cyclic",
        "edges": [*exported["edges"], {"id": "back", "source": "end", "target": "double"}],
    }
    dialog.get_by_test_id("import-text").fill(json.dumps(cyclic))
    dialog.get_by_test_id("import-confirm").click()
    expect(dialog.get_by_test_id("import-error")).to_contain_text("problem")
    expect(dialog.get_by_test_id("import-error")).to_contain_text("'end' (end) has no output handles")
    shot(page, "import-invalid-workflow")

    file = tmp_path / "again.json"
    file.write_text(json.dumps({**exported, "title": f"{title} again"}))
    dialog.get_by_test_id("import-file").set_input_files(str(file))
    expect(dialog.get_by_test_id("import-text")).to_have_value(re.compile("again"))
    dialog.get_by_test_id("import-confirm").click()
    editor = EditorPage(page)
    expect(page.get_by_test_id("editor")).to_have_attribute("data-loaded", "true")
    expect(page.get_by_test_id("workflow-title")).to_have_value(f"{title} again")
    assert editor.node_ids() == {"start", "double", "end"}
    editor.test_run()
    editor.expect_run_status("COMPLETED")


def test_export_and_import_in_the_editor(page: Page, server: Server) -> None:
    wf = server.create_workflow(chain("Editor JSON", ("first", "return {'a': 1}")))
    editor = EditorPage(page).open(wf["id"])
    page.get_by_test_id("workflow-title").fill("Editor JSON, edited")
    with page.expect_download() as download:
        page.get_by_test_id("export-json").click()
    exported = json.loads(Path(download.value.path()).read_text())
    assert exported["title"] == "Editor JSON, edited"  # what the editor shows, unsaved edits included

    replacement = chain("Replaced", ("alpha", "return {'a': 1}"), ("beta", "return {'b': 2}"))
    page.get_by_test_id("import-json").click()
    dialog = page.get_by_test_id("import-dialog")
    dialog.get_by_test_id("import-text").fill(json.dumps({**replacement, "nodes": [{"id": "x", "type": "nope"}]}))
    dialog.get_by_test_id("import-confirm").click()
    expect(dialog.get_by_test_id("import-error")).to_contain_text("nope")
    assert editor.node_ids() == {"start", "first", "end"}  # nothing replaced

    dialog.get_by_test_id("import-text").fill(json.dumps(replacement))
    dialog.get_by_test_id("import-confirm").click()
    expect(dialog).to_be_hidden()
    expect(editor.node("beta")).to_be_visible()
    assert editor.node_ids() == {"start", "alpha", "beta", "end"}
    expect(page.get_by_test_id("unsaved-indicator")).to_be_visible()
    editor.save()
    editor.expect_version(2)
    assert [n["id"] for n in server.api("GET", f"/api/workflows/{wf['id']}")["nodes"]] == [
        "start",
        "alpha",
        "beta",
        "end",
    ]


def test_the_api_page_works_without_internet(page: Page, server: Server) -> None:
    refused: list[str] = []

    def local_only(route: Route, request: Request) -> None:
        if request.url.startswith(server.url):
            route.continue_()
        else:
            refused.append(request.url)
            route.abort()

    page.route("**/*", local_only)
    # Swagger UI renders the whole inline spec (~200 KB) in the page's own script, before "load": 2-3 s of
    # JavaScript on a quiet two-core machine, over 10 s beside a second browser in CI. The test is about
    # where the assets come from, so it waits for the rendered title, with room for a loaded machine.
    page.goto("/schema", wait_until="commit")
    expect(page.locator(".swagger-ui .title")).to_contain_text("Flowdeck API", timeout=45_000)
    expect(page.locator(".opblock-summary-path").filter(has_text=re.compile(r"^/api/test-runs$")).first).to_be_visible()
    assert refused == []
    shot(page, "schema-offline")
