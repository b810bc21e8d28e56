"""``flowdeck worker`` with ``FLOWDECK_METRICS_PORT``: a worker process serves its own /metrics."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import urllib.request

import pytest


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.mark.postgres
def test_a_worker_process_serves_its_metrics_on_its_own_port(postgres_url: str) -> None:
    port = _free_port()
    env = {**os.environ, "FLOWDECK_DATABASE_URL": postgres_url, "FLOWDECK_METRICS_PORT": str(port)}
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
    finally:
        worker.send_signal(signal.SIGTERM)
        worker.communicate(timeout=30)
