"""Real ``flowdeck serve`` and ``flowdeck worker`` processes a test may kill, freeze and start again.

Each process runs in a process group of its own (its sandbox workers with it), so a signal reaches the whole
group as it would a crashed or frozen machine; its output is appended to one log file across restarts.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator, Mapping
from pathlib import Path


def flowdeck_command(*args: str) -> list[str]:
    return [sys.executable, "-m", "flowdeck", *args]


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def provision(env: Mapping[str, str], email: str, tenant: str) -> str:
    """Migrate the database, create a user of ``tenant`` and return a new API token of theirs (the CLI, as an
    operator would)."""
    run = {"env": dict(env), "check": True, "capture_output": True, "text": True, "timeout": 120}
    subprocess.run(flowdeck_command("migrate"), **run)  # type: ignore[call-overload]
    subprocess.run(
        flowdeck_command("users", "create", "--email", email, "--tenant", tenant), input="a long pw 1\n", **run
    )  # type: ignore[call-overload]
    made = subprocess.run(flowdeck_command("tokens", "create", "--email", email), **run)  # type: ignore[call-overload]
    return str(made.stdout.strip().splitlines()[-1])


class FlowdeckProcess:
    """One ``flowdeck`` command, restartable; ``ready`` is the line it prints once it works (none for serve,
    whose readiness is its health endpoint)."""

    def __init__(self, name: str, args: list[str], env: Mapping[str, str], log: Path, health_url: str | None = None):
        self.name = name
        self.args = args
        self.env = dict(env)
        self.log = log
        self.health_url = health_url
        self.child: subprocess.Popen[bytes] | None = None
        self._log_offset = 0
        self.frozen = False
        self.url = ""

    @property
    def alive(self) -> bool:
        return self.child is not None and self.child.poll() is None

    def start(self) -> None:
        self._log_offset = self.log.stat().st_size if self.log.exists() else 0
        with self.log.open("ab") as out:
            self.child = subprocess.Popen(
                flowdeck_command(*self.args),
                env=self.env,
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
            )
        self.frozen = False

    def wait_ready(self, timeout: float = 60.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            assert self.child is not None
            if self.child.poll() is not None:
                raise RuntimeError(f"{self.name} exited ({self.child.returncode}):\n{self.tail()}")
            if self._is_ready():
                return
            time.sleep(0.1)
        raise RuntimeError(f"{self.name} not ready within {timeout}s:\n{self.tail()}")

    def _is_ready(self) -> bool:
        if self.health_url is not None:
            with contextlib.suppress(OSError), urllib.request.urlopen(self.health_url, timeout=1) as response:
                return bool(response.status == 200)
            return False
        with self.log.open("rb") as log:
            log.seek(self._log_offset)
            return b" running" in log.read()

    def signal(self, signum: int) -> None:
        if self.child is not None and self.child.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.child.pid, signum)

    def kill(self) -> None:
        """SIGKILL to the whole group (a crash: nothing is drained or handed back)."""
        self.signal(signal.SIGKILL)
        if self.child is not None:
            self.child.wait(30)
        self.frozen = False

    def freeze(self) -> None:
        self.signal(signal.SIGSTOP)
        self.frozen = True

    def thaw(self) -> None:
        self.signal(signal.SIGCONT)
        self.frozen = False

    def terminate(self, timeout: float = 20.0) -> None:
        """SIGTERM to the whole group (a graceful stop, as an operator's), SIGKILL if it has not ended in time."""
        if not self.alive:
            return
        self.thaw()
        self.signal(signal.SIGTERM)
        assert self.child is not None
        try:
            self.child.wait(timeout)
        except subprocess.TimeoutExpired:
            self.kill()

    def stop(self) -> None:
        """End it whatever its state (thawed first, so a frozen group dies too)."""
        if self.alive:
            self.thaw()
            self.kill()

    def tail(self, size: int = 4000) -> str:
        if not self.log.exists():
            return ""
        return self.log.read_bytes()[-size:].decode(errors="replace")


def serve_process(name: str, env: Mapping[str, str], log_dir: Path) -> FlowdeckProcess:
    """``flowdeck serve`` on a free port of 127.0.0.1 (not started); its base URL is ``url``."""
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    args = ["serve", "--host", "127.0.0.1", "--port", str(port)]
    process = FlowdeckProcess(name, args, env, log_dir / f"{name}.log", health_url=f"{url}/api/health")
    process.url = url
    return process


@contextlib.contextmanager
def serving(env: Mapping[str, str], log_dir: Path, *names: str) -> Iterator[list[FlowdeckProcess]]:
    """``flowdeck serve`` processes (one per name, ``serve`` when none), each healthy before the block runs and
    stopped by PID after it, whatever happened."""
    started: list[FlowdeckProcess] = []
    try:
        for name in names or ("serve",):
            process = serve_process(name, env, log_dir)
            process.start()
            started.append(process)
        for process in started:
            process.wait_ready()
        yield started
    finally:
        for process in started:
            process.terminate()
