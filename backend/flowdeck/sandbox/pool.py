"""SandboxPool: pre-started worker processes, a wall-clock watchdog, and replacement of dead workers.

Each worker is a fresh interpreter (``python -P -c``, empty environment, cwd ``/``) that imports only
:mod:`flowdeck.sandbox.worker`. Not ``multiprocessing``: its ``forkserver`` and ``spawn`` contexts
re-import the server's ``__main__`` in every child (measured: +450 ms per replacement under a
Litestar entry point) and hand the child the server's environment; ``fork`` would copy the
server's memory, sockets and secrets.

The pool keeps one end of a socketpair per worker and lets the event loop read it (an asyncio
protocol: the loop's own readiness callbacks, measured faster than a thread hop per call, see
tests/bench/bench_sandbox.py), so the loop never blocks on a worker. A call that outlives its
timeout gets its process killed; a process that dies (CPU limit, crash, kill from outside) fails
its call if it had one. Either way a replacement starts in the background while the other workers
keep serving.

Calls wait for a process in per-tenant lines served in turn, and the pool grows past its floor by a
process for a tenant that waits while every process is held by others, shrinking back when idle
(the rules: :mod:`flowdeck.sandbox.fair_share`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import socket
import struct
import sys
from collections import deque
from collections.abc import Callable, Coroutine, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, Self, cast

import msgspec

import flowdeck
from flowdeck.domain.errors import NodeError
from flowdeck.domain.labels import LabelLimits
from flowdeck.sandbox.fair_share import NO_TENANT, PoolBounds, TenantLines
from flowdeck.sandbox.messages import (
    Ready,
    RunFailure,
    RunRequest,
    SandboxCrashError,
    SandboxTimeoutError,
    SandboxUnavailableError,
    WorkerSettings,
    decode_reply,
    encode,
    error_from_failure,
)
from flowdeck.sandbox.worker import COMMAND

__all__ = ("SandboxPool", "SandboxResult")

_log = logging.getLogger(__name__)

_MIB: Final = 1024 * 1024
_REAP_TIMEOUT: Final = 5.0
_EXTRA_WORKERS: Final = 4
"""The default ceiling is the floor plus this many processes."""


@dataclass(frozen=True, slots=True)
class SandboxResult:
    output: Any
    logs: str
    labels: dict[str, str] = field(default_factory=dict)
    """What the code set with ``ctx.label(name, value)``."""


class _WorkerGoneError(Exception):
    """The worker's pipe closed: the process died or was killed."""


class _CallTimeoutError(Exception):
    pass


def _expire(future: asyncio.Future[bytes]) -> None:
    if not future.done():
        future.set_exception(_CallTimeoutError())


# The framing of multiprocessing.connection.Connection, which the worker uses: a signed 4-byte
# big-endian length, or -1 and an unsigned 8-byte length for messages over 2 GiB.
_LENGTH = struct.Struct("!i")
_LONG_LENGTH = struct.Struct("!Q")


def _frame(payload: bytes) -> bytes:
    if len(payload) > 0x7FFFFFFF:
        return _LENGTH.pack(-1) + _LONG_LENGTH.pack(len(payload)) + payload
    return _LENGTH.pack(len(payload)) + payload


class _Worker(asyncio.Protocol):
    """The pool's handle on one worker process: its pipe, read by the event loop, and its pending call.

    A protocol rather than blocking reads on the socket: uvloop, which uvicorn uses, makes every fd
    it watches non-blocking, so a blocking ``recv`` would break on large replies.
    """

    def __init__(self, process: asyncio.subprocess.Process, on_gone: Callable[[_Worker], None]) -> None:
        self.process = process
        self.pid = process.pid
        self.alive = True
        self.in_service = False
        self.retired = False
        self.idle_since = 0.0
        self._loop = asyncio.get_running_loop()
        self._on_gone = on_gone
        self._transport: asyncio.Transport | None = None
        self._buffer = bytearray()
        # The first message is Ready; waiting for it starts before the transport exists.
        self._pending: asyncio.Future[bytes] | None = self._loop.create_future()
        self._ready = self._pending

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # A socket transport; uvloop's does not subclass asyncio.Transport, so no isinstance check.
        self._transport = cast(asyncio.Transport, transport)

    def data_received(self, data: bytes) -> None:
        self._buffer += data
        while (message := self._next_message()) is not None:
            if self._pending is not None and not self._pending.done():
                self._pending.set_result(message)

    def _next_message(self) -> bytes | None:
        buffer = self._buffer
        if len(buffer) < _LENGTH.size:
            return None
        (size,) = _LENGTH.unpack_from(buffer)
        start = _LENGTH.size
        if size == -1:
            if len(buffer) < start + _LONG_LENGTH.size:
                return None
            (size,) = _LONG_LENGTH.unpack_from(buffer, start)
            start += _LONG_LENGTH.size
        end = start + size
        if len(buffer) < end:
            return None
        message = bytes(buffer[start:end])
        del buffer[:end]
        return message

    def connection_lost(self, exc: Exception | None) -> None:
        self._detach()
        self._on_gone(self)

    def _detach(self) -> None:
        if not self.alive:
            return
        self.alive = False
        if self._pending is not None and not self._pending.done():
            self._pending.set_exception(_WorkerGoneError())
        if self._transport is not None:
            self._transport.close()

    async def wait_ready(self, timeout: float) -> bytes:
        try:
            return await asyncio.wait_for(self._ready, timeout)
        finally:
            self._pending = None

    async def call(self, payload: bytes, timeout: float) -> bytes:
        """Send one request and wait up to ``timeout`` seconds for its reply."""
        if not self.alive or self._transport is None:
            raise _WorkerGoneError
        future: asyncio.Future[bytes] = self._loop.create_future()
        self._pending = future
        timer = self._loop.call_later(timeout, _expire, future)
        try:
            self._transport.write(_frame(payload))
            return await future
        finally:
            timer.cancel()
            self._pending = None

    def kill(self) -> None:
        self._detach()
        if self.process.returncode is None:
            # os.kill, not Process.kill: Popen.send_signal polls first, which can reap the child behind
            # the child watcher's back. Until the watcher reaps it, the pid cannot have been reused.
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, signal.SIGKILL)

    async def exit_code(self, timeout: float) -> int | None:
        """The exit code (negative: the signal), or None if the process has not ended in time."""
        try:
            return await asyncio.wait_for(self.process.wait(), timeout)
        except TimeoutError:
            return None


def _death_message(code: int | None) -> str:
    if code == -signal.SIGXCPU:
        return "the code used up its CPU time budget and its sandbox worker was stopped"
    if code == -signal.SIGKILL:
        return "the sandbox worker was killed (out of memory, or stopped from outside)"
    if code is not None and code < 0:
        return f"the sandbox worker crashed ({signal.Signals(-code).name})"
    return f"the sandbox worker exited unexpectedly (exit code {code})"


def _worker_environment() -> dict[str, str]:
    """Nothing of the server's environment but the path to this package: workers must not see secrets."""
    package_root = str(Path(flowdeck.__file__).resolve().parent.parent)
    inherited = os.environ.get("PYTHONPATH")
    return {"PYTHONPATH": package_root if not inherited else f"{package_root}{os.pathsep}{inherited}"}


class SandboxPool:
    """``size`` pre-started sandbox workers, growing to ``max_size`` for tenants held out; ``run``
    borrows one per call, and callers that cannot have one wait in their tenant's line."""

    def __init__(
        self,
        size: int = 2,
        *,
        max_size: int | None = None,
        idle_seconds: float = 30.0,
        memory_mb: int = 256,
        max_output_bytes: int = 16 * _MIB,
        max_log_chars: int = 256 * 1024,
        start_timeout: float = 10.0,
    ) -> None:
        self._bounds = PoolBounds(size, size + _EXTRA_WORKERS if max_size is None else max_size, idle_seconds)
        self._memory_mb = memory_mb
        self._settings = WorkerSettings(max_output_bytes=max_output_bytes, max_log_chars=max_log_chars)
        self._start_timeout = start_timeout
        self._environment = _worker_environment()
        self._idle: deque[_Worker] = deque()
        """Idle workers, the longest idle first."""
        self._lines: TenantLines[asyncio.Future[_Worker | None]] = TenantLines(size)
        self._workers: set[_Worker] = set()
        self._starting: set[asyncio.Task[None]] = set()
        self._reaping: set[asyncio.Task[None]] = set()
        self._shrink_timer: asyncio.TimerHandle | None = None
        self._started = False
        self._closed = False

    @property
    def size(self) -> int:
        """The floor: processes kept even when idle, and the most one tenant holds at a time."""
        return self._bounds.floor

    @property
    def max_size(self) -> int:
        return self._bounds.ceiling

    @property
    def usage(self) -> tuple[int, int]:
        """(busy, idle) live processes right now."""
        idle = 0 if self._closed else len(self._idle)
        return max(0, self._live() - idle), idle

    @property
    def waiting(self) -> int:
        """Calls waiting for a process."""
        return self._lines.waiting

    @property
    def closed(self) -> bool:
        return self._closed

    @property
    def pids(self) -> tuple[int, ...]:
        """Process ids of the live workers (for operators and tests)."""
        return tuple(sorted(worker.pid for worker in self._workers if worker.alive))

    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    async def start(self) -> None:
        """Start the workers and wait until every one is ready."""
        if self._started:
            return
        self._started = True
        results = await asyncio.gather(*(self._spawn() for _ in range(self.size)), return_exceptions=True)
        for result in results:
            if isinstance(result, _Worker):
                result.in_service = True
                result.idle_since = asyncio.get_running_loop().time()
                self._idle.append(result)
        errors = [result for result in results if isinstance(result, BaseException)]
        if errors:
            await self.close()
            raise SandboxUnavailableError(f"the sandbox workers did not start: {errors[0]!r}") from errors[0]

    async def close(self) -> None:
        """Stop every worker; calls still running fail with SandboxUnavailableError."""
        if self._closed:
            return
        self._closed = True
        for waiter in self._lines.drain():
            if not waiter.done():
                waiter.set_result(None)
        if self._shrink_timer is not None:
            self._shrink_timer.cancel()
        for task in list(self._starting):
            task.cancel()
        await asyncio.gather(*self._starting, return_exceptions=True)
        for worker in list(self._workers):
            self._retire(worker)
        await asyncio.gather(*self._reaping, return_exceptions=True)

    async def run(
        self,
        code: str,
        ctx: Mapping[str, Any],
        *,
        timeout_seconds: float,
        memory_mb: int | None = None,
        tenant: str = NO_TENANT,
        label_limits: LabelLimits | None = None,
    ) -> SandboxResult:
        """Run ``code`` (a function body of ``ctx``) in a worker; raise a SandboxError subclass on failure.

        ``tenant``: whose line the call waits in for a worker (``timeout_seconds`` starts once it has one);
        ``label_limits``: what ``ctx.label`` may set (default: ``LabelLimits()``)."""
        if timeout_seconds <= 0:
            raise ValueError("timeout_seconds must be positive")
        memory = memory_mb or self._memory_mb
        try:
            limits = label_limits or LabelLimits()
            request = RunRequest(
                code, dict(ctx), float(timeout_seconds), memory, limits.max_labels, limits.max_value_chars
            )
            payload = encode(request)
        except (TypeError, ValueError, msgspec.EncodeError) as exc:
            raise NodeError(f"the context cannot be passed to the sandbox: {exc}", retryable=False) from None
        worker = await self._acquire(tenant)
        reusable = False
        try:
            reply = decode_reply(await worker.call(payload, timeout_seconds))
            reusable = not isinstance(reply, Ready) and not reply.recycle
        except _CallTimeoutError:
            raise SandboxTimeoutError(f"timed out after {timeout_seconds:g} s; the code was stopped") from None
        except _WorkerGoneError:
            raise await self._gone_error(worker) from None
        except msgspec.DecodeError:
            raise SandboxCrashError("the sandbox worker sent an unreadable reply") from None
        finally:
            self._release(worker, tenant, reusable=reusable)
        if isinstance(reply, RunFailure):
            raise error_from_failure(reply)
        if isinstance(reply, Ready):
            raise SandboxCrashError("the sandbox worker restarted during the call")
        return SandboxResult(reply.output, reply.logs, reply.labels)

    async def _gone_error(self, worker: _Worker) -> NodeError:
        if self._closed:
            return SandboxUnavailableError("the sandbox pool was closed during the call")
        return SandboxCrashError(_death_message(await worker.exit_code(1.0)))

    async def _acquire(self, tenant: str) -> _Worker:
        if self._closed or not self._started:
            raise SandboxUnavailableError("the sandbox pool is not running")
        # After every change the free workers have gone to whoever may take them, so a free worker
        # now means no one waiting may take it: the caller goes first if it may.
        if self._idle and self._lines.may_take(tenant):
            self._lines.take(tenant)
            return self._idle.pop()
        waiter: asyncio.Future[_Worker | None] = asyncio.get_running_loop().create_future()
        self._lines.join(tenant, waiter)
        self._grow()
        try:
            worker = await waiter
        except asyncio.CancelledError:
            if not self._lines.leave(tenant, waiter) and waiter.done() and not waiter.cancelled():
                handed = waiter.result()  # handed a worker just as it gave up
                if handed is not None:
                    self._release(handed, tenant, reusable=True)
            raise
        if worker is None:
            raise SandboxUnavailableError("the sandbox pool was closed")
        return worker

    def _release(self, worker: _Worker, tenant: str, *, reusable: bool) -> None:
        self._lines.give_back(tenant)
        if reusable and worker.alive and not self._closed:
            worker.idle_since = asyncio.get_running_loop().time()
            self._idle.append(worker)
        else:
            self._retire(worker)
        self._dispatch()
        self._schedule_shrink()

    def _dispatch(self) -> None:
        """Hand the free workers to the waiting calls, tenants in turn."""
        while self._idle and not self._closed:
            chosen = self._lines.next_in_turn()
            if chosen is None:
                return
            tenant, waiter = chosen
            if waiter.done():  # cancelled while waiting; its task takes it out of the line
                self._lines.give_back(tenant)
                continue
            waiter.set_result(self._idle.pop())

    def _live(self) -> int:
        """Workers in service (busy or idle), not counting those still starting."""
        return sum(1 for worker in self._workers if worker.in_service and worker.alive)

    def _grow(self) -> None:
        """Start a worker for each tenant that waits while holding none, up to the ceiling."""
        if self._closed:
            return
        wanted = self._bounds.to_start(live=self._live(), starting=len(self._starting), starving=self._lines.starving())
        for _ in range(wanted):
            self._background(self._starting, self._start_worker())

    def _schedule_shrink(self) -> None:
        if self._shrink_timer is not None or self._closed or not self._idle or self._live() <= self.size:
            return
        loop = asyncio.get_running_loop()
        # A little late: the loop may run a timer a clock tick early, before it is due.
        due = self._idle[0].idle_since + self._bounds.idle_seconds + 0.05
        self._shrink_timer = loop.call_at(due, self._shrink)

    def _shrink(self) -> None:
        """Stop the workers above the floor that have been idle long enough."""
        self._shrink_timer = None
        now = asyncio.get_running_loop().time()
        surplus = self._bounds.to_stop(live=self._live(), idle_for=[now - worker.idle_since for worker in self._idle])
        for _ in range(surplus):
            worker = self._idle.popleft()
            worker.in_service = False  # stopped on purpose: no replacement
            self._retire(worker)
        self._schedule_shrink()

    def _retire(self, worker: _Worker) -> None:
        """Kill and reap ``worker``; if it was serving, refill the pool. Idempotent."""
        if worker.retired:
            return
        worker.retired = True
        worker.kill()
        self._workers.discard(worker)
        with contextlib.suppress(ValueError):
            self._idle.remove(worker)
        self._background(self._reaping, self._reap(worker))
        if worker.in_service and not self._closed:
            for _ in range(self.size - self._live() - len(self._starting)):
                self._background(self._starting, self._start_worker())
            self._grow()

    def _background(self, tasks: set[asyncio.Task[None]], coroutine: Coroutine[Any, Any, None]) -> None:
        task = asyncio.get_running_loop().create_task(coroutine)
        tasks.add(task)
        task.add_done_callback(tasks.discard)

    async def _spawn(self) -> _Worker:
        parent_socket, child_socket = socket.socketpair()
        try:
            process = await asyncio.create_subprocess_exec(
                sys.executable,
                "-P",
                "-c",
                COMMAND,
                str(child_socket.fileno()),
                msgspec.json.encode(self._settings).decode(),
                pass_fds=(child_socket.fileno(),),
                stdin=asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.DEVNULL,
                env=self._environment,
                cwd="/",
            )
        except BaseException:
            parent_socket.close()
            raise
        finally:
            child_socket.close()
        worker = _Worker(process, self._retire)
        self._workers.add(worker)
        try:
            await asyncio.get_running_loop().create_unix_connection(lambda: worker, sock=parent_socket)
            ready = decode_reply(await worker.wait_ready(self._start_timeout))
            if not isinstance(ready, Ready):
                raise SandboxUnavailableError(f"unexpected first message from a sandbox worker: {ready!r}")
        except BaseException:
            self._retire(worker)
            parent_socket.close()
            raise
        return worker

    async def _start_worker(self) -> None:
        """Start a worker and put it in service, retrying until it starts: the pool must refill."""
        delay = 0.05
        while not self._closed:
            try:
                worker = await self._spawn()
            except Exception:  # noqa: BLE001 - whatever failed, keep trying
                _log.exception("sandbox worker failed to start; retrying in %.2f s", delay)
                await asyncio.sleep(delay)
                delay = min(delay * 2, 5.0)
                continue
            if self.closed:  # closed while it started
                self._retire(worker)
                return
            worker.in_service = True
            worker.idle_since = asyncio.get_running_loop().time()
            self._idle.append(worker)
            self._dispatch()
            self._schedule_shrink()
            return

    async def _reap(self, worker: _Worker) -> None:
        if await worker.exit_code(_REAP_TIMEOUT) is None:
            _log.warning("sandbox worker %s did not exit after SIGKILL", worker.pid)
