"""What crosses the pipe between the pool and a worker (msgspec JSON), and the errors callers see.

JSON rather than msgpack: msgpack cannot carry integers beyond 64 bits, which JSON outputs may hold.
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal

import msgspec

from flowdeck.domain.errors import NodeError

__all__ = (
    "FailureKind",
    "Ready",
    "Reply",
    "RunFailure",
    "RunRequest",
    "RunSuccess",
    "SandboxCompileError",
    "SandboxCrashError",
    "SandboxError",
    "SandboxMemoryError",
    "SandboxOutputError",
    "SandboxRuntimeError",
    "SandboxTimeoutError",
    "SandboxUnavailableError",
    "SandboxViolationError",
    "WorkerSettings",
    "decode_reply",
    "decode_request",
    "encode",
    "error_from_failure",
)

FailureKind = Literal["compile", "violation", "runtime", "output", "memory"]


class WorkerSettings(msgspec.Struct, frozen=True):
    """Fixed for a worker's lifetime (passed when the process starts)."""

    max_output_bytes: int
    max_log_chars: int


class RunRequest(msgspec.Struct, frozen=True):
    code: str
    ctx: dict[str, Any]
    timeout_seconds: float
    memory_mb: int
    max_labels: int = 10
    """``ctx.label``: labels the call may set, and characters of a value (domain/labels.py)."""
    max_label_chars: int = 200


class Ready(msgspec.Struct, frozen=True, tag="ready"):
    """The first message of every worker: its setup is done."""

    pid: int


class RunSuccess(msgspec.Struct, frozen=True, tag="ok"):
    output: Any
    logs: str
    recycle: bool = False
    labels: dict[str, str] = {}
    """What the code set with ``ctx.label(name, value)``."""


class RunFailure(msgspec.Struct, frozen=True, tag="error"):
    """``message`` is ready to show and names the user's line; ``line`` repeats it for machines."""

    kind: FailureKind
    message: str
    line: int | None = None
    error_type: str | None = None
    logs: str = ""
    recycle: bool = False
    """The worker asks to be replaced (after a MemoryError its heap is not to be trusted)."""


Reply = Ready | RunSuccess | RunFailure

_encoder = msgspec.json.Encoder()
_request_decoder = msgspec.json.Decoder(RunRequest)
_reply_decoder: msgspec.json.Decoder[Ready | RunSuccess | RunFailure] = msgspec.json.Decoder(Reply)


def encode(message: RunRequest | Reply) -> bytes:
    return _encoder.encode(message)


def decode_request(data: bytes) -> RunRequest:
    return _request_decoder.decode(data)


def decode_reply(data: bytes) -> Reply:
    return _reply_decoder.decode(data)


class SandboxError(NodeError):
    """A python node attempt failed; ``line`` is in the user's code, ``logs`` holds what it printed.

    The message is complete as given (the worker writes the line into it: ``... (line 3)``).
    ``error_type`` is what a run shows as the error's type.
    """

    retryable_default: ClassVar[bool] = True
    error_type_default: ClassVar[str] = "SandboxError"

    def __init__(self, message: str, *, line: int | None = None, logs: str = "", error_type: str | None = None) -> None:
        super().__init__(message, retryable=self.retryable_default, error_type=error_type or self.error_type_default)
        self.line = line
        self.logs = logs


class SandboxCompileError(SandboxError):
    retryable_default = False
    error_type_default = "CompileError"


class SandboxViolationError(SandboxError):
    retryable_default = False
    error_type_default = "SandboxViolation"


class SandboxRuntimeError(SandboxError):
    """The code raised; ``error_type`` is the exception's name (``ZeroDivisionError``)."""

    error_type_default = "RuntimeError"


class SandboxOutputError(SandboxError):
    """The returned value is not JSON-serialisable or too large."""

    error_type_default = "OutputError"


class SandboxMemoryError(SandboxError):
    error_type_default = "MemoryError"


class SandboxTimeoutError(SandboxError):
    error_type_default = "TimeoutError"


class SandboxCrashError(SandboxError):
    """The worker process died during the call (CPU limit, crash, killed from outside)."""

    error_type_default = "WorkerCrashed"


class SandboxUnavailableError(SandboxError):
    """The pool is closed or could not start a worker."""

    error_type_default = "SandboxUnavailable"


_ERRORS: dict[FailureKind, type[SandboxError]] = {
    "compile": SandboxCompileError,
    "violation": SandboxViolationError,
    "runtime": SandboxRuntimeError,
    "output": SandboxOutputError,
    "memory": SandboxMemoryError,
}


def error_from_failure(failure: RunFailure) -> SandboxError:
    error_class = _ERRORS[failure.kind]
    return error_class(failure.message, line=failure.line, logs=failure.logs, error_type=failure.error_type)
