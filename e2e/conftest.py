"""End-to-end fixtures: a real ``flowdeck serve`` on a free port with a temporary SQLite file, and Debian's Chromium.

The server is started once per session. A user is made with the CLI (``flowdeck users create``, password on
stdin) and an API token with ``flowdeck tokens create``, which tests use to set up workflows over REST.
The browser context is signed in once (through the login page) and its cookies are reused by every test.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Browser, Page

REPO = Path(__file__).resolve().parents[1]
CHROMIUM = os.environ.get("FLOWDECK_E2E_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
]
EMAIL = "e2e@example.com"
PASSWORD = "e2e-password-0451"
VIEWPORT = {"width": 1440, "height": 900}
SCREENSHOTS = REPO / "e2e" / "screenshots"


def _flowdeck() -> str:
    local = Path(sys.executable).parent / "flowdeck"
    return str(local) if local.exists() else (shutil.which("flowdeck") or "flowdeck")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass(frozen=True)
class Server:
    url: str
    token: str
    sqlite_dir: Path | None = None
    """Where SQLite data sources may live (``FLOWDECK_SQLITE_DIRS`` of the server)."""
    env: dict[str, str] = field(default_factory=dict, repr=False)

    def add_user(self, email: str, tenant: str = "e2e", password: str = PASSWORD) -> None:
        """Another user (``flowdeck users create``, as an operator would); by default in the e2e user's tenant."""
        subprocess.run(
            [_flowdeck(), "users", "create", "--email", email, "--tenant", tenant],
            input=password + "\n",
            env=self.env,
            check=True,
            capture_output=True,
            text=True,
        )

    def api(self, method: str, path: str, body: Any = None) -> Any:
        """Call the REST API with the e2e user's API token (test set-up, not what the UI does)."""
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(self.url + path, data=data, method=method)
        request.add_header("Authorization", f"Bearer {self.token}")
        if data is not None:
            request.add_header("Content-Type", "application/json")
        try:
            with urllib.request.urlopen(request, timeout=15) as response:
                text = response.read().decode()
        except urllib.error.HTTPError as exc:
            raise AssertionError(f"{method} {path} -> {exc.code}: {exc.read().decode()}") from exc
        return json.loads(text) if text else None

    def create_workflow(self, definition: dict[str, Any]) -> dict[str, Any]:
        result: dict[str, Any] = self.api("POST", "/api/workflows", definition)
        return result


def _wait_healthy(url: str, proc: subprocess.Popen[bytes], log: Path, timeout: float = 40.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"flowdeck serve exited ({proc.returncode}):\n{log.read_text()[-4000:]}")
        try:
            with urllib.request.urlopen(url + "/api/health", timeout=1) as response:
                if response.status == 200:
                    return
        except OSError:
            time.sleep(0.2)
    raise RuntimeError(f"flowdeck serve did not answer within {timeout}s:\n{log.read_text()[-4000:]}")


@pytest.fixture(scope="session")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    if not (REPO / "static" / "index.html").is_file():
        pytest.fail("the editor is not built: run `make frontend` (npm ci && npm run build in frontend/)")
    work = tmp_path_factory.mktemp("flowdeck-e2e")
    db = work / "flowdeck.db"
    (work / "sqlite").mkdir()  # where SQLite data sources of e2e tests may live
    env = {
        **os.environ,
        "FLOWDECK_DATABASE_URL": f"sqlite+aiosqlite:///{db}",
        "FLOWDECK_SECRET_KEY": "e2e-secret-key-not-for-production",
        "FLOWDECK_SANDBOX_WORKERS": "1",
        "FLOWDECK_WORKER_CONCURRENCY": "8",
        "FLOWDECK_SQLITE_DIRS": str(work / "sqlite"),
        "FLOWDECK_HTTP_ALLOW": "127.0.0.1",
    }
    flowdeck = _flowdeck()
    subprocess.run([flowdeck, "migrate"], env=env, check=True, capture_output=True)
    subprocess.run(
        [flowdeck, "users", "create", "--email", EMAIL, "--tenant", "e2e"],
        input=PASSWORD + "\n",
        env=env,
        check=True,
        capture_output=True,
        text=True,
    )
    token = (
        subprocess.run(
            [flowdeck, "tokens", "create", "--email", EMAIL, "--name", "e2e"],
            env=env,
            check=True,
            capture_output=True,
            text=True,
        )
        .stdout.strip()
        .splitlines()[-1]
    )
    port = _free_port()
    log = work / "serve.log"
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [flowdeck, "serve", "--host", "127.0.0.1", "--port", str(port)],
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    url = f"http://127.0.0.1:{port}"
    try:
        _wait_healthy(url, proc, log)
        yield Server(url=url, token=token, sqlite_dir=work / "sqlite", env=env)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@pytest.fixture(scope="session")
def browser_type_launch_args(browser_type_launch_args: dict[str, Any]) -> dict[str, Any]:
    return {**browser_type_launch_args, "executable_path": CHROMIUM, "args": CHROMIUM_ARGS}


@pytest.fixture(scope="session")
def signed_in_state(browser: Browser, server: Server) -> dict[str, Any]:
    """Cookies of a session made through the login page, once per test session."""
    context = browser.new_context(viewport=VIEWPORT)
    page = context.new_page()
    page.goto(server.url + "/login")
    page.get_by_test_id("login-email").fill(EMAIL)
    page.get_by_test_id("login-password").fill(PASSWORD)
    page.get_by_test_id("login-submit").click()
    page.get_by_test_id("workflow-list-page").wait_for()
    state: dict[str, Any] = context.storage_state()
    context.close()
    return state


@pytest.fixture
def browser_context_args(
    browser_context_args: dict[str, Any], server: Server, signed_in_state: dict[str, Any]
) -> dict[str, Any]:
    return {**browser_context_args, "base_url": server.url, "viewport": VIEWPORT, "storage_state": signed_in_state}


@pytest.fixture
def page(page: Page) -> Page:
    page.set_default_timeout(10_000)
    return page


def shot(page: Page, name: str) -> None:
    """Save a screenshot under e2e/screenshots/ (to look at; not compared)."""
    SCREENSHOTS.mkdir(exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / f"{name}.png"))
