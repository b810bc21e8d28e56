"""Engine worker processes started beside another process (``flowdeck serve --workers N``, ``bench --workers``).

Each child is ``flowdeck worker --supervised``: it ignores SIGTERM/SIGINT sent to it directly and takes
its orders from its parent through its stdin instead, one line per order (``stop``: drain as on a first
signal; ``hurry``: end the drain, as a second signal does). A terminal's Ctrl-C reaches the whole
process group and systemd signals every process of a service, so a child obeying those signals would
count the parent's forwarded order as a second signal and cut its drain short. When the parent dies,
however hard, the kernel closes the pipe: the child reads end-of-file and stops the same way (so no
worker outlives its parent by more than ``FLOWDECK_SHUTDOWN_GRACE``).

With ``channels`` (serve on SQLite without Redis: ``engine/pipe_transport.py``), each child also gets a
socket of its own, passed as ``--parent-pipe FD``, that carries live updates, wake-ups and revocations.

A child that exits on its own (a crash) is started again after a pause that doubles from one second up
to thirty, and starts again from one second once a child has stayed up for a minute.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from flowdeck.lifecycle import StopRequests

__all__ = ("ParentOrders", "WorkerProcesses", "worker_command")

log = logging.getLogger(__name__)

READY_TEXT = " running"
"""What ``flowdeck worker`` prints once it claims work (``worker <id> running (concurrency N)``)."""

_FIRST_BACKOFF = 1.0
_MAX_BACKOFF = 30.0
_HEALTHY_AFTER = 60.0


def worker_command(*extra: str) -> list[str]:
    """The command line of a supervised ``flowdeck worker`` run by this Python."""
    return [sys.executable, "-m", "flowdeck", "worker", "--supervised", *extra]


@dataclass
class _Child:
    index: int
    process: subprocess.Popen[str]
    started_at: float
    ready: threading.Event = field(default_factory=threading.Event)
    worker_id: str = ""


class WorkerProcesses:
    """``count`` worker processes, kept running until :meth:`stop`.

    ``echo`` receives every line a child prints on stdout (prefixed with its number); the children's
    stderr (their logs) is the parent's own.
    """

    def __init__(
        self,
        count: int,
        *,
        env: Mapping[str, str] | None = None,
        command: Sequence[str] | None = None,
        echo: Callable[[str], None] | None = None,
        restart: bool = True,
        channels: Callable[[], socket.socket] | None = None,
        env_of: Callable[[int], Mapping[str, str]] | None = None,
    ) -> None:
        """``env_of``: what child ``index`` has in its environment beyond ``env`` (kept when it is started again)."""
        self.count = count
        self._channels = channels
        self._env = dict(os.environ if env is None else env)
        self._env_of = env_of
        self._command = list(command or worker_command())
        self._echo = echo
        self._restart = restart
        self._children: list[_Child] = []
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._told_at: float | None = None
        self._monitor: threading.Thread | None = None
        self.restarts = 0

    def start(self) -> None:
        """Start every child (and the thread that restarts crashed ones); returns at once."""
        if self._stopping.is_set():  # told to stop before it started (a signal during start-up)
            return
        with self._lock:
            self._children = [self._spawn(i) for i in range(self.count)]
        if self._restart and self.count:
            self._monitor = threading.Thread(target=self._watch, name="flowdeck-worker-processes", daemon=True)
            self._monitor.start()

    def wait_ready(self, timeout: float) -> None:
        """Block until every child printed its ``running`` line; RuntimeError when one does not in time."""
        deadline = time.monotonic() + timeout
        for child in self.children():
            while not child.ready.wait(0.1):
                code = child.process.poll()
                if code is not None:
                    raise RuntimeError(f"worker process {child.index} exited with status {code} before it was ready")
                if time.monotonic() > deadline:
                    raise RuntimeError(f"worker process {child.index} (pid {child.process.pid}) did not start in time")

    def children(self) -> list[_Child]:
        with self._lock:
            return list(self._children)

    @property
    def pids(self) -> list[int]:
        return [child.process.pid for child in self.children()]

    @property
    def worker_ids(self) -> list[str]:
        return [child.worker_id for child in self.children()]

    def order(self, word: str) -> None:
        """Tell every running child ``stop`` or ``hurry``."""
        if word == "stop" and not self._stopping.is_set():
            self._told_at = time.monotonic()
            self._stopping.set()
        for child in self.children():
            _tell(child.process, word)

    def stop(self, timeout: float) -> None:
        """Ask every child to drain (unless told already) and wait for it; a child still running ``timeout``
        seconds after it was first told is killed."""
        self.order("stop")
        if self._monitor is not None:
            self._monitor.join()
        deadline = (self._told_at or time.monotonic()) + timeout
        for child in self.children():
            try:
                child.process.wait(max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                log.warning("worker process %d (pid %d) still runs: killed", child.index, child.process.pid)
                child.process.kill()
                child.process.wait()
            if child.process.stdin is not None:
                with contextlib.suppress(OSError):
                    child.process.stdin.close()

    def _spawn(self, index: int) -> _Child:
        channel = self._channels() if self._channels is not None else None
        extra = ["--parent-pipe", str(channel.fileno())] if channel is not None else []
        try:
            process = subprocess.Popen(  # noqa: S603 -- our own interpreter and module
                [*self._command, *extra],
                env={**self._env, **self._env_of(index)} if self._env_of is not None else self._env,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                text=True,
                bufsize=1,
                pass_fds=(channel.fileno(),) if channel is not None else (),
            )
        finally:
            if channel is not None:
                channel.close()  # the child holds its end now
        child = _Child(index, process, time.monotonic())
        threading.Thread(target=self._relay, args=(child,), name=f"flowdeck-worker-{index}-out", daemon=True).start()
        return child

    def _relay(self, child: _Child) -> None:
        assert child.process.stdout is not None
        for line in child.process.stdout:
            text = line.rstrip("\n")
            if not child.ready.is_set() and READY_TEXT in text:
                child.worker_id = text.split()[1] if text.startswith("worker ") else ""
                child.ready.set()
            if self._echo is not None:
                self._echo(f"[worker {child.index}] {text}")
        child.process.stdout.close()

    def _watch(self) -> None:
        backoff = _FIRST_BACKOFF
        while not self._stopping.wait(0.2):
            for child in self.children():
                code = child.process.poll()
                if code is None or self._stopping.is_set():
                    continue
                if time.monotonic() - child.started_at >= _HEALTHY_AFTER:
                    backoff = _FIRST_BACKOFF
                log.warning(
                    "worker process %d (pid %d) exited with status %d: starting it again in %g s",
                    child.index,
                    child.process.pid,
                    code,
                    backoff,
                )
                if self._stopping.wait(backoff):
                    return
                backoff = min(_MAX_BACKOFF, backoff * 2)
                replacement = self._spawn(child.index)
                with self._lock:
                    self._children[child.index] = replacement
                self.restarts += 1


def _tell(process: subprocess.Popen[str], word: str) -> None:
    if process.poll() is not None or process.stdin is None:
        return
    with contextlib.suppress(OSError, ValueError):  # it just exited: nothing to tell
        process.stdin.write(word + "\n")
        process.stdin.flush()


class ParentOrders(StopRequests):
    """The supervised worker's side: stop requests read from stdin (``stop``, then ``hurry``).

    SIGINT and SIGTERM are ignored from now on. ``await orders.first()`` returns at the first ``stop``
    (or end-of-file: the parent is gone); a ``hurry`` after it calls every ``on_second``.
    """

    def __init__(self) -> None:
        super().__init__()
        for sig in (signal.SIGINT, signal.SIGTERM):
            signal.signal(sig, signal.SIG_IGN)
        self._reader = asyncio.create_task(self._read(), name="flowdeck-parent-orders")

    async def _read(self) -> None:
        loop = asyncio.get_running_loop()
        stream = asyncio.StreamReader()
        await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(stream), sys.stdin)
        while True:
            line = await stream.readline()
            if line and line.strip() not in (b"stop", b"hurry"):
                continue
            if not line:  # the parent is gone: drain (without hurrying a drain already under way)
                sys.stdout = sys.stderr  # nobody reads the stdout it relayed any more: print to the log
                self._stop.set()
                return
            self._received()
