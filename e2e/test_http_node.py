"""The HTTP request node in the editor: placed from the palette, pointed at a local server (127.0.0.1, which the
e2e server's FLOWDECK_HTTP_ALLOW lists), test-run, its answer shown; a refused literal URL is named on the node."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
from graphs import chain
from pages.editor_page import EditorPage
from playwright.sync_api import Page, expect

from conftest import Server


class _Greeter(BaseHTTPRequestHandler):
    def log_message(self, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        query = parse_qs(urlsplit(self.path).query)
        body = json.dumps({"greeting": f"hello {query.get('name', ['?'])[0]}"}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


@pytest.fixture
def greeter() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Greeter)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


def test_an_http_node_built_on_the_canvas_calls_a_local_server(page: Page, server: Server, greeter: str) -> None:
    wf = server.create_workflow(chain("HTTP by hand"))
    editor = EditorPage(page).open(wf["id"])
    before = editor.node_ids()
    editor.drag_from_palette("http", 420, 260)
    http_id = editor.new_node_id("http", before)
    editor.select(http_id)
    expect(page.get_by_test_id("http-method")).to_have_value("GET")

    # a literal internal address is refused where it is typed, naming the setting
    page.get_by_test_id("http-url").fill("http://169.254.169.254/latest/meta-data/")
    expect(page.get_by_test_id("inspector")).to_contain_text("link-local address", timeout=5000)
    expect(page.get_by_test_id("inspector")).to_contain_text("FLOWDECK_HTTP_ALLOW")

    page.get_by_test_id("http-url").fill(greeter + "/greet")
    page.get_by_test_id("http-query-add").click()
    query = page.get_by_test_id("http-query")
    query.get_by_label("name", exact=True).fill("name")
    query.get_by_label("value of name").fill("{{ ctx.input.who }}")

    editor.delete_edge(editor.edges().first)
    editor.connect_drawing("start", "default", http_id, edges_after=1)
    editor.connect_drawing(http_id, "success", "end", edges_after=2)
    expect(page.get_by_test_id("problem-count")).to_have_text("0", timeout=5000)

    editor.set_test_input('{"who": "Ada"}')
    editor.test_run()
    editor.expect_run_status("COMPLETED")
    editor.expect_status(http_id, "COMPLETED")
    editor.select(http_id)
    page.get_by_test_id("tab-run-data").click()
    output = page.get_by_test_id("run-data-output")
    expect(output).to_contain_text('"status": 200')
    expect(output).to_contain_text('"greeting": "hello Ada"')
