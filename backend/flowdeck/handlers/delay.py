"""``delay``: a durable timer. The next nodes are queued with ``available_at`` in the future; no slot waits."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from flowdeck.domain.errors import ConfigIssue, NodeError
from flowdeck.handlers.base import HandlerResult, NodeHandler, NodeHelpers

__all__ = ("MAX_DELAY_SECONDS", "DelayHandler")

MAX_DELAY_SECONDS = 30 * 24 * 3600


def _seconds(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


class DelayHandler(NodeHandler):
    type_name = "delay"
    confined = True
    handles = ("default",)
    template_fields = ("seconds",)

    def config_issues(self, config: Mapping[str, Any]) -> list[ConfigIssue]:
        value = config.get("seconds")
        if isinstance(value, str) and "{{" in value:
            return []
        seconds = _seconds(value)
        if seconds is None:
            return [ConfigIssue("config.seconds", "seconds must be a number or a template")]
        if not 0 <= seconds <= MAX_DELAY_SECONDS:
            return [ConfigIssue("config.seconds", f"seconds must be between 0 and {MAX_DELAY_SECONDS} (30 days)")]
        return []

    async def execute(
        self, config: Mapping[str, Any], context: Mapping[str, Any], helpers: NodeHelpers
    ) -> HandlerResult:
        seconds = _seconds(config.get("seconds"))
        if seconds is None:
            try:
                seconds = float(config.get("seconds"))  # type: ignore[arg-type]
            except (TypeError, ValueError):
                raise NodeError(
                    f"seconds resolved to {config.get('seconds')!r}, not a number", retryable=False
                ) from None
        if not 0 <= seconds <= MAX_DELAY_SECONDS:
            raise NodeError(f"seconds must be between 0 and {MAX_DELAY_SECONDS}, got {seconds}", retryable=False)
        return HandlerResult(output={"delayedSeconds": seconds}, next_handle="default", queue_delay=seconds)
