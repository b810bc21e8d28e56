"""``loop``: runs its body once per item (``ctx.loop = {item, index, count}``), then leaves on ``done``.

The handler only resolves and checks the items; the engine runs the iterations (``concurrency``
at a time), each in its own iteration scope, and completes the node with
``{items: [per-iteration results], count}``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from flowdeck.domain.errors import ConfigIssue, NodeError
from flowdeck.handlers.base import HandlerResult, NodeHandler, NodeHelpers

__all__ = ("DEFAULT_MAX_ITEMS", "MAX_CONCURRENCY", "LoopHandler", "loop_concurrency")

DEFAULT_MAX_ITEMS = 10_000
MAX_CONCURRENCY = 50
_ITEMS_CEILING = 100_000


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


class LoopHandler(NodeHandler):
    type_name = "loop"
    confined = True
    handles = ("loop", "done")
    template_fields = ("items",)

    def config_issues(self, config: Mapping[str, Any]) -> list[ConfigIssue]:
        issues: list[ConfigIssue] = []
        items = config.get("items")
        if not (isinstance(items, list) or (isinstance(items, str) and "{{" in items)):
            issues.append(ConfigIssue("config.items", "items must be a list or a template that gives one"))
        concurrency = config.get("concurrency", 1)
        if _int(concurrency) is None or not 1 <= concurrency <= MAX_CONCURRENCY:
            issues.append(
                ConfigIssue("config.concurrency", f"concurrency must be an integer from 1 to {MAX_CONCURRENCY}")
            )
        max_items = config.get("maxItems", DEFAULT_MAX_ITEMS)
        if _int(max_items) is None or not 1 <= max_items <= _ITEMS_CEILING:
            issues.append(ConfigIssue("config.maxItems", f"maxItems must be an integer from 1 to {_ITEMS_CEILING}"))
        return issues

    async def execute(
        self, config: Mapping[str, Any], context: Mapping[str, Any], helpers: NodeHelpers
    ) -> HandlerResult:
        items = config.get("items")
        if not isinstance(items, list):
            raise NodeError(f"items resolved to {type(items).__name__}, not a list", retryable=False)
        max_items = int(config.get("maxItems", DEFAULT_MAX_ITEMS))
        if len(items) > max_items:
            raise NodeError(f"items has {len(items)} entries, more than maxItems ({max_items})", retryable=False)
        return HandlerResult(output={"count": len(items)}, next_handle="loop", iterations=items)


def loop_concurrency(config: Mapping[str, Any]) -> int:
    value = config.get("concurrency", 1)
    return value if isinstance(value, int) and 1 <= value <= MAX_CONCURRENCY else 1
