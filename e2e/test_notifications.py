"""Notifications in the editor's Settings: a URL set and saved, its signing secret shown once, a test
notification received and verified; and the SLA-breach mark of a slow run in the run detail and history."""

from __future__ import annotations

import base64
import hashlib
import hmac
import http.server
import json
import threading
from collections.abc import Iterator
from typing import Any

import pytest
from graphs import chain, edge, node
from pages.editor_page import EditorPage
from pages.settings_panel import SettingsPanel
from playwright.sync_api import Page, expect
from standardwebhooks.webhooks import Webhook

from conftest import Server, shot


class _Receiver(http.server.BaseHTTPRequestHandler):
    calls: list[tuple[dict[str, str], bytes]] = []

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        type(self).calls.append((dict(self.headers), body))
        self.send_response(200)
        self.end_headers()
        self.wfile.write(b"ok")

    def log_message(self, *_: Any) -> None:
        pass


@pytest.fixture
def receiver() -> Iterator[str]:
    _Receiver.calls = []
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Receiver)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}/alerts"
    httpd.shutdown()
    httpd.server_close()


def test_a_notification_url_set_in_settings_shows_its_secret_once_and_sends_a_signed_test(
    page: Page, server: Server, receiver: str
) -> None:
    wf = server.create_workflow(chain("Alerting"))
    editor = EditorPage(page)
    editor.open(wf["id"])
    settings = SettingsPanel(page).open()
    section = settings.root.get_by_test_id("notifications")
    expect(section.get_by_test_id("notify-secret-status")).to_contain_text("No signing secret yet")
    expect(section.get_by_test_id("notify-test")).to_be_disabled()
    section.get_by_test_id("notify-onFailure-url").fill(receiver)
    editor.save()
    editor.expect_version(2)

    secret_box = section.get_by_test_id("notify-secret")
    expect(secret_box).to_be_visible()
    secret = secret_box.input_value()
    assert secret.startswith("fdn_")
    shot(page, "settings-notifications")

    section.get_by_test_id("notify-test").click()
    result = section.get_by_test_id("notify-test-result")
    expect(result).to_have_attribute("data-ok", "true")
    expect(result).to_contain_text("200")
    headers, body = _Receiver.calls[-1]
    Webhook("whsec_" + base64.b64encode(secret.encode()).decode()).verify(body, headers)  # the secret as copied
    expected = "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()
    assert headers["X-Flowdeck-Signature"] == expected  # deprecated, still sent
    assert json.loads(body)["event"] == "test" and json.loads(body)["workflow"]["id"] == wf["id"]

    page.reload()  # shown once: the secret is not shown again
    settings = SettingsPanel(page).open()
    section = settings.root.get_by_test_id("notifications")
    expect(section.get_by_test_id("notify-secret-status")).to_contain_text("Signing secret set")
    expect(section.get_by_test_id("notify-onFailure-url")).to_have_value(receiver)
    expect(section.get_by_test_id("notify-secret")).to_have_count(0)


def test_a_run_past_its_sla_is_marked_in_the_run_detail_and_history(page: Page, server: Server) -> None:
    definition = {
        "title": "Slow on purpose",
        "nodes": [
            node("start", "start", 0),
            node("wait", "delay", 280, config={"seconds": 3}),
            node("end", "end", 560, config={"outputParameters": {}}),
        ],
        "edges": [edge("start", "wait"), edge("wait", "end")],
        "options": {"slaSeconds": 0.5},
    }
    wf = server.create_workflow(definition)
    run_id = server.api("POST", f"/api/workflows/{wf['id']}/runs", {"input": {}})["instanceId"]
    page.goto(f"{server.url}/runs/{run_id}")
    expect(page.get_by_test_id("run-detail").get_by_test_id("sla-breached")).to_be_visible(timeout=10_000)
    expect(page.get_by_test_id("run-detail")).to_have_attribute("data-status", "COMPLETED", timeout=15_000)
    expect(page.get_by_test_id("run-detail").get_by_test_id("sla-breached")).to_be_visible()  # the run went on
    page.goto(f"{server.url}/runs")
    row = page.locator(f'[data-testid="run-row"][data-id="{run_id}"]')
    expect(row.get_by_test_id("sla-breached")).to_be_visible()
