"""The sandbox worker process: a loop that runs one user function per request, under resource limits.

Started by the pool as ``python -P -c <COMMAND> FD SETTINGS`` with an empty environment: a fresh
interpreter that imports this module and nothing of the server. Keep its imports light, they are
every worker's start-up time.
"""

from __future__ import annotations

import datetime
import math
import os
import resource
import signal
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from multiprocessing.connection import Connection
from types import CodeType, TracebackType
from typing import Any, Final

import msgspec

from flowdeck.domain.labels import LabelLimits
from flowdeck.sandbox.compiler import FILENAME, FUNCTION_NAME, CodeCompileError, compile_cached
from flowdeck.sandbox.messages import (
    FailureKind,
    Ready,
    RunFailure,
    RunRequest,
    RunSuccess,
    WorkerSettings,
    decode_request,
    encode,
)
from flowdeck.sandbox.node_context import NodeContext
from flowdeck.sandbox.policy import PolicyViolationError, PrintCollector, SandboxLimitError, make_globals

__all__ = ("COMMAND", "OutputError", "Runner", "main", "serve", "to_json_value")

COMMAND: Final = "from flowdeck.sandbox.worker import main; main()"

_MIB: Final = 1024 * 1024
_PAGE: Final = os.sysconf("SC_PAGE_SIZE")
_MAX_OUTPUT_DEPTH: Final = 100
_MAX_INT_DIGITS: Final = 4300  # what int -> str allows by default
_MAX_MESSAGE: Final = 2000


class OutputError(Exception):
    """The returned value cannot become JSON; the message names where and why."""


_HINTS: Final[dict[str, str]] = {
    "set": "convert it to a sorted list",
    "frozenset": "convert it to a sorted list",
    "datetime": "use .isoformat()",
    "date": "use .isoformat()",
    "time": "use .isoformat()",
    "timedelta": "use .total_seconds()",
    "Decimal": "use float() or str()",
    "bytes": "use .decode()",
    "generator": "wrap it in list()",
}


class _JsonConverter:
    """Copies a return value into plain JSON types, charging an estimate of its encoded size."""

    def __init__(self, max_bytes: int) -> None:
        self.remaining = max_bytes
        self.max_bytes = max_bytes

    def _charge(self, size: int) -> None:
        self.remaining -= size
        if self.remaining < 0:
            raise OutputError(f"output is larger than {self.max_bytes // _MIB} MiB of JSON")

    def convert(self, value: Any, path: str, depth: int) -> Any:
        kind = type(value)
        if kind is str:
            self._charge(len(value) + 2)
            return value
        if value is None or kind is bool:
            self._charge(5)
            return value
        if kind is int:
            if value.bit_length() > _MAX_INT_DIGITS * 3:  # about 4300 decimal digits
                raise OutputError(f"{path} is an integer too large for JSON")
            self._charge(value.bit_length() // 3 + 2)
            return value
        if kind is float:
            if not math.isfinite(value):
                raise OutputError(f"{path} is {value}, which JSON cannot represent")
            self._charge(24)
            return value
        if depth >= _MAX_OUTPUT_DEPTH:
            raise OutputError(f"{path} is nested more than {_MAX_OUTPUT_DEPTH} levels deep")
        if isinstance(value, dict):
            return self._convert_dict(value, path, depth)
        if isinstance(value, list | tuple):
            self._charge(2)
            return [self.convert(item, f"{path}[{index}]", depth + 1) for index, item in enumerate(value)]
        for plain in (str, int, float):  # subclasses such as IntEnum become the plain type
            if isinstance(value, plain):
                return self.convert(plain(value), path, depth)
        name = kind.__name__
        hint = _HINTS.get(name, "return only dicts, lists, strings, numbers, booleans and None")
        raise OutputError(f"{path} is a {name}, which is not JSON-serialisable; {hint}")

    def _convert_dict(self, value: dict[Any, Any], path: str, depth: int) -> dict[str, Any]:
        self._charge(2)
        result: dict[str, Any] = {}
        for key, item in value.items():
            if isinstance(key, str):
                text = str(key)
            elif key is None or isinstance(key, bool | int | float):
                text = "null" if key is None else "true" if key is True else "false" if key is False else repr(key)
            else:
                raise OutputError(f"{path} has a key of type {type(key).__name__}; JSON keys must be strings")
            self._charge(len(text) + 3)
            result[text] = self.convert(item, f"{path}[{text!r}]", depth + 1)
        return result


def to_json_value(value: Any, max_bytes: int) -> Any:
    """A copy of ``value`` in plain JSON types (keys made strings as ``json.dumps`` does), or OutputError."""
    return _JsonConverter(max_bytes).convert(value, "output", 0)


def _user_line(tb: TracebackType | None) -> int | None:
    line = None
    while tb is not None:
        if tb.tb_frame.f_code.co_filename == FILENAME:
            line = tb.tb_lineno
        tb = tb.tb_next
    return line


def _describe(exc: BaseException) -> str:
    try:
        text = str(exc)
    except Exception:  # noqa: BLE001 - a message that cannot be built is not worth failing over
        text = ""
    if len(text) > _MAX_MESSAGE:
        text = text[:_MAX_MESSAGE] + "..."
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


class _Limits:
    """RLIMIT_AS and RLIMIT_CPU armed around one call; hard limits are left as they were."""

    def __init__(self) -> None:
        self._statm = os.open("/proc/self/statm", os.O_RDONLY)
        self._as_hard = resource.getrlimit(resource.RLIMIT_AS)[1]
        self._cpu_hard = resource.getrlimit(resource.RLIMIT_CPU)[1]

    def address_space(self) -> int:
        return int(os.pread(self._statm, 64, 0).split(maxsplit=1)[0]) * _PAGE

    @contextmanager
    def armed(self, memory_mb: int, timeout_seconds: float) -> Iterator[None]:
        # RLIMIT_CPU counts the process's whole life, so the budget is added to what it has used.
        usage = resource.getrusage(resource.RUSAGE_SELF)
        cpu = math.ceil(usage.ru_utime + usage.ru_stime + timeout_seconds) + 1
        resource.setrlimit(resource.RLIMIT_CPU, (self._cap(cpu, self._cpu_hard), self._cpu_hard))
        memory = self.address_space() + memory_mb * _MIB
        resource.setrlimit(resource.RLIMIT_AS, (self._cap(memory, self._as_hard), self._as_hard))
        try:
            yield
        finally:
            resource.setrlimit(resource.RLIMIT_AS, (self._as_hard, self._as_hard))

    @staticmethod
    def _cap(value: int, hard: int) -> int:
        return value if hard == resource.RLIM_INFINITY else min(value, hard)


class Runner:
    """Runs requests one at a time in this process."""

    def __init__(self, settings: WorkerSettings) -> None:
        self._settings = settings
        self._limits = _Limits()
        self._baseline = self._limits.address_space()

    def run(self, request: RunRequest) -> RunSuccess | RunFailure:
        printer = PrintCollector(self._settings.max_log_chars)
        reply: RunSuccess | RunFailure
        with self._limits.armed(request.memory_mb, request.timeout_seconds):
            reply = self._run_limited(request, printer)
        # A worker that kept more than one call's budget after the call is replaced rather than trusted.
        grown = self._limits.address_space() - self._baseline > request.memory_mb * _MIB
        if grown and not reply.recycle:
            reply = msgspec.structs.replace(reply, recycle=True)
        return reply

    def _run_limited(self, request: RunRequest, printer: PrintCollector) -> RunSuccess | RunFailure:
        def failure(
            kind: FailureKind, message: str, line: int | None, error_type: str, recycle: bool = False
        ) -> RunFailure:
            text = message if line is None else f"{message} (line {line})"
            return RunFailure(kind, text, line, error_type, logs=printer.text(), recycle=recycle)

        try:
            code = compile_cached(request.code)
        except CodeCompileError as exc:
            return RunFailure("compile", str(exc), exc.line, "CompileError", logs=printer.text())
        try:
            ctx = NodeContext(request.ctx, LabelLimits(request.max_labels, request.max_label_chars))
            output = _load(code, printer)(ctx)
            output = to_json_value(output, self._settings.max_output_bytes)
        except OutputError as exc:
            return failure("output", str(exc), None, "OutputError")
        except PolicyViolationError as exc:
            return failure("violation", str(exc), _user_line(exc.__traceback__), "SandboxViolation")
        except SandboxLimitError as exc:
            return failure("memory", f"memory limit: {exc}", _user_line(exc.__traceback__), "MemoryError")
        except MemoryError as exc:
            message = f"memory limit exceeded: the code needed more than {request.memory_mb} MiB"
            return failure("memory", message, _user_line(exc.__traceback__), "MemoryError", recycle=True)
        except BaseException as exc:  # noqa: BLE001 - user code may raise anything, SystemExit included
            return failure("runtime", _describe(exc), _user_line(exc.__traceback__), type(exc).__name__)
        return RunSuccess(output=output, logs=printer.text(), labels=ctx.labels)


def _load(code: CodeType, printer: PrintCollector) -> Callable[[dict[str, Any]], Any]:
    namespace = make_globals(printer)
    exec(code, namespace)  # noqa: S102 - RestrictedPython-compiled code in the sandbox worker
    function: Callable[[dict[str, Any]], Any] = namespace[FUNCTION_NAME]  # type: ignore[assignment]
    return function


def _prepare() -> None:
    # Signals to the whole process group or cgroup (Ctrl-C, systemd stopping the service) are for the
    # server: it drains, letting this worker finish its call, and then closes the pipe, which ends us.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))  # no core dumps of user data
    os.environ.clear()  # started with almost none; defence in depth
    # Load what the allowed modules import lazily on first use, before any memory limit applies.
    datetime.datetime.strptime("2000-01-02 +0000", "%Y-%m-%d %z")


def serve(conn: Connection, settings: WorkerSettings) -> None:
    """The worker's main loop: answer requests until the pool closes its end of the pipe."""
    _prepare()
    runner = Runner(settings)
    conn.send_bytes(encode(Ready(pid=os.getpid())))
    while True:
        try:
            data = conn.recv_bytes()
        except (EOFError, OSError):
            return
        try:
            request = decode_request(data)
        except Exception as exc:  # noqa: BLE001 - a malformed request must not end the worker
            conn.send_bytes(encode(RunFailure(kind="runtime", message=f"bad request: {exc}")))
            continue
        reply = runner.run(request)
        try:
            data = encode(reply)
        except Exception as exc:  # noqa: BLE001 - to_json_value should make this unreachable; never die of it
            data = encode(
                RunFailure(kind="output", message=f"output cannot be encoded: {exc}", error_type="OutputError")
            )
        conn.send_bytes(data)


def main() -> None:
    """Entry point of a worker process: ``argv`` is the pipe's file descriptor and the JSON settings."""
    fd, settings = sys.argv[1:3]
    serve(Connection(int(fd)), msgspec.json.decode(settings, type=WorkerSettings))
