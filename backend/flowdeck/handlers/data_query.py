"""The ``dataQuery`` node (SPEC §2, §6): runs one of the tenant's saved queries with resolved ``args``.

``args`` values are templates resolved before ``execute`` (``{"customerId": "{{ ctx.input.id }}"}``
keeps the native value); the query binds them as parameters, never as SQL text. The saved query is
looked up for the run's tenant, so another tenant's query id is "not found". The query gets most of
the node's ``timeoutSeconds`` (the rest is margin for a clean, classified timeout error).
Connection failures and timeouts are retried by the node's policy; SQL errors, wrong arguments and
missing queries are not.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar, Final

from flowdeck.domain.errors import ConfigIssue, NodeError
from flowdeck.handlers.base import HandlerResult, NodeHandler, NodeHelpers
from flowdeck.queries.engine import QueryEngine
from flowdeck.queries.placeholders import IDENTIFIER
from flowdeck.queries.service import run_saved_query
from flowdeck.queries.store import DataSourceStore

__all__ = ("DataQueryHandler",)

_TIMEOUT_SHARE: Final = 0.9


class DataQueryHandler(NodeHandler):
    type_name: ClassVar[str] = "dataQuery"
    handles: ClassVar[tuple[str, ...]] = ("success", "error")
    template_fields: ClassVar[tuple[str, ...]] = ("args",)

    def __init__(self, store: DataSourceStore, engine: QueryEngine) -> None:
        self._store = store
        self._engine = engine

    def config_issues(self, config: Mapping[str, Any]) -> list[ConfigIssue]:
        issues = []
        query_id = config.get("queryId")
        if not isinstance(query_id, str) or not query_id.strip():
            issues.append(ConfigIssue("config.queryId", "queryId must be the id of a saved query"))
        args = config.get("args", {})
        if not isinstance(args, dict):
            issues.append(ConfigIssue("config.args", "args must be an object of argument names to values or templates"))
        else:
            issues += [
                ConfigIssue(f"config.args.{name}", "an argument name is a letter or _ then letters, digits, _")
                for name in args
                if not isinstance(name, str) or not IDENTIFIER.fullmatch(name)
            ]
        return issues

    async def execute(
        self, config: Mapping[str, Any], context: Mapping[str, Any], helpers: NodeHelpers
    ) -> HandlerResult:
        tenant_id = helpers.tenant_id
        query_id = config.get("queryId")
        if not isinstance(query_id, str) or not query_id.strip():
            raise NodeError("config.queryId must be the id of a saved query", retryable=False, error_type="ConfigError")
        args = config.get("args", {})
        if not isinstance(args, Mapping):
            raise NodeError("config.args must be an object", retryable=False, error_type="ConfigError")
        output = await run_saved_query(
            self._store, self._engine, tenant_id, query_id.strip(), args,
            timeout=helpers.timeout_seconds * _TIMEOUT_SHARE,
        )  # fmt: skip
        return HandlerResult(output=output, next_handle="success")
