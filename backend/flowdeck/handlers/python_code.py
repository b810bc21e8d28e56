"""The ``python`` node (SPEC §2): user code run by the sandbox pool, never in the server process."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from flowdeck.domain.errors import ConfigIssue, NodeError
from flowdeck.handlers.base import HandlerResult, NodeHandler, NodeHelpers
from flowdeck.sandbox.code_reads import code_reads
from flowdeck.sandbox.compiler import check_code
from flowdeck.sandbox.pool import SandboxPool

__all__ = ("PythonCodeHandler",)


class PythonCodeHandler(NodeHandler):
    """Runs ``config.code`` with ``ctx`` in a sandbox worker; its return value is the node's output."""

    type_name: ClassVar[str] = "python"
    confined = True
    handles: ClassVar[tuple[str, ...]] = ("success", "error")
    template_fields: ClassVar[tuple[str, ...]] = ()  # code is never template-resolved

    def __init__(self, pool: SandboxPool, *, memory_mb: int | None = None) -> None:
        self._pool = pool
        self._memory_mb = memory_mb

    def code_reads(self, config: Mapping[str, Any]) -> set[str] | None:
        code = config.get("code")
        return code_reads(code) if isinstance(code, str) else set()

    def config_issues(self, config: Mapping[str, Any]) -> list[ConfigIssue]:
        code = config.get("code")
        if not isinstance(code, str):
            return [ConfigIssue(path="config.code", message="code must be a string")]
        return check_code(code)

    async def execute(
        self, config: Mapping[str, Any], context: Mapping[str, Any], helpers: NodeHelpers
    ) -> HandlerResult:
        code = config.get("code")
        if not isinstance(code, str) or not code.strip():
            raise NodeError("config.code must be a non-empty string", retryable=False, error_type="ConfigError")
        result = await self._pool.run(
            code,
            context,
            timeout_seconds=helpers.timeout_seconds,
            memory_mb=self._memory_mb,
            label_limits=helpers.label_limits,
            tenant=helpers.tenant_id,
        )
        return HandlerResult(
            output=result.output, next_handle="success", logs=result.logs or None, labels=result.labels or None
        )
