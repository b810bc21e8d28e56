"""A PostgreSQL cluster of a test's own: ``initdb`` and ``pg_ctl`` on a free port in a temporary directory, so
the test may restart it, kill it or cut its connections; stopped by its PID at the end, always.

Runs as the ``postgres`` user when the tests run as root (PostgreSQL refuses root). Under ``CI=true`` a missing
``initdb`` is an error, never a skip.
"""

from __future__ import annotations

import contextlib
import glob
import os
import shutil
import signal
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest


def postgres_bin(name: str) -> str | None:
    found = shutil.which(name) or sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"))
    return found if isinstance(found, str) else (found[-1] if found else None)


@dataclass
class Cluster:
    data: Path
    port: int
    as_user: list[str]
    options: str = ""
    """The server's options (port, socket directory, settings): ``start`` starts it again with them."""

    @property
    def url(self) -> str:
        return f"postgresql+asyncpg://postgres@127.0.0.1:{self.port}/postgres"

    def pg_ctl(self, *args: str) -> None:
        pg_ctl = postgres_bin("pg_ctl")
        assert pg_ctl is not None
        # The server's output goes to its log: a pipe the server inherited would keep this call waiting.
        command = [*self.as_user, pg_ctl, "-D", str(self.data), "-w", "-l", str(self.data.parent / "log"), *args]
        subprocess.run(command, check=True, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, timeout=60)

    def start(self) -> None:
        self.pg_ctl("-o", self.options, "start")

    def stop(self) -> None:
        self.pg_ctl("-m", "fast", "stop")

    def pid(self) -> int | None:
        with contextlib.suppress(OSError, ValueError, IndexError):
            return int((self.data / "postmaster.pid").read_text().splitlines()[0])
        return None


@contextlib.contextmanager
def own_cluster() -> Iterator[Cluster]:
    initdb = postgres_bin("initdb")
    if initdb is None or postgres_bin("pg_ctl") is None:
        if os.environ.get("CI") == "true":
            pytest.fail("initdb and pg_ctl are required in CI (a PostgreSQL cluster of the test's own)")
        pytest.skip("no initdb/pg_ctl on this machine")
    root = Path(tempfile.mkdtemp(prefix="flowdeck-pg-"))  # not under pytest's directory: the postgres user reads it
    root.chmod(0o755)
    as_user: list[str] = []
    if os.geteuid() == 0:  # PostgreSQL refuses to run as root
        shutil.chown(root, "postgres")
        as_user = ["runuser", "-u", "postgres", "--"]
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = int(sock.getsockname()[1])
    data = root / "data"
    initialise = [*as_user, initdb, "-D", str(data), "-A", "trust", "-U", "postgres"]
    subprocess.run(initialise, check=True, capture_output=True, timeout=120)
    options = f"-p {port} -k {root} -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=200"
    running = Cluster(data, port, as_user, options)
    running.start()
    try:
        yield running
    finally:
        pid = running.pid()
        with contextlib.suppress(subprocess.SubprocessError):
            running.pg_ctl("-m", "immediate", "stop")
        if pid is not None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        shutil.rmtree(root, ignore_errors=True)
