"""``flowdeck worker`` with ``FLOWDECK_METRICS_ADDR`` (or the older ``FLOWDECK_METRICS_PORT``): its own /metrics."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import urllib.error
import urllib.request

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
