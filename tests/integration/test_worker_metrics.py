"""``flowdeck worker`` and ``flowdeck serve`` with ``FLOWDECK_METRICS_ADDR`` (or the older ``FLOWDECK_METRICS_PORT``):
/metrics on a listener of their own, and not on serve's public port."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.mark.postgres
@pytest.mark.parametrize("variable", ["FLOWDECK_METRICS_ADDR", "FLOWDECK_METRICS_PORT"])
def test_a_worker_process_serves_its_metrics_on_its_own_port(postgres_url: str, variable: str) -> None:
    port = _free_port()
    value = f"127.0.0.1:{port}" if variable == "FLOWDECK_METRICS_ADDR" else str(port)
    env = {k: v for k, v in os.environ.items() if not k.startswith("FLOWDECK_METRICS")}
    env |= {"FLOWDECK_DATABASE_URL": postgres_url, variable: value, "FLOWDECK_HOST": "127.0.0.1"}
    worker = subprocess.Popen(
        [sys.executable, "-m", "flowdeck", "worker"], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        assert worker.stdout is not None
        announced = [worker.stdout.readline() for _ in range(2)]
        assert any(f":{port}/metrics" in line for line in announced), announced
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as response:
            text = response.read().decode()
        assert "flowdeck_queue_due_jobs" in text and "flowdeck_sandbox_processes" in text
        with pytest.raises(urllib.error.HTTPError) as elsewhere:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=10)
        elsewhere.value.close()
        assert elsewhere.value.code == 404
    finally:
        worker.send_signal(signal.SIGTERM)
        worker.communicate(timeout=30)


def _get(url: str, headers: dict[str, str] | None = None) -> tuple[int, str]:
    request = urllib.request.Request(url, headers=headers or {})
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as refused:
        with refused:
            return refused.code, refused.read().decode()


def _wait_for_port(port: int, seconds: float = 20) -> None:
    deadline = time.monotonic() + seconds
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)


def test_serve_answers_metrics_on_its_listener_and_404_on_the_app_port(tmp_path: Path) -> None:
    """As an outsider finds a default ``serve``: /metrics on the app's port is a 404, whatever is sent."""
    app_port, metrics_port = _free_port(), _free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("FLOWDECK_METRICS")}
    env |= {
        "FLOWDECK_DATABASE_URL": f"sqlite+aiosqlite:///{tmp_path / 'serve.db'}",
        "FLOWDECK_SANDBOX_WORKERS": "1",
        "FLOWDECK_METRICS_ADDR": f"127.0.0.1:{metrics_port}",
    }
    serve = subprocess.Popen(
        [sys.executable, "-m", "flowdeck", "serve", "--port", str(app_port)],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        assert serve.stdout is not None
        lines = []
        for line in serve.stdout:  # ready once it prints the first user's password
            lines.append(line)
            if line.startswith("or as admin@flowdeck.local"):
                break
        assert f"metrics on http://127.0.0.1:{metrics_port}/metrics\n" in lines, lines
        status, text = _get(f"http://127.0.0.1:{metrics_port}/metrics")
        assert status == 200 and "flowdeck_queue_due_jobs" in text
        _wait_for_port(app_port)  # uvicorn binds the app's port once the start-up above is done
        for headers in ({}, {"Authorization": "Bearer guessed-token-0123456789"}):
            status, text = _get(f"http://127.0.0.1:{app_port}/metrics", headers)
            assert status == 404 and "flowdeck_" not in text
    finally:
        serve.send_signal(signal.SIGTERM)
        serve.communicate(timeout=30)
