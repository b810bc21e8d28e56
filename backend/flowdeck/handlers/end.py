"""``end``: resolves ``outputParameters``; the result becomes (part of) the run output."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from flowdeck.domain.errors import ConfigIssue
from flowdeck.handlers.base import HandlerResult, NodeHandler, NodeHelpers

__all__ = ("EndHandler",)


class EndHandler(NodeHandler):
    type_name = "end"
    confined = True
    handles = ()
    template_fields = ("outputParameters",)

    def config_issues(self, config: Mapping[str, Any]) -> list[ConfigIssue]:
        params = config.get("outputParameters", {})
        if not isinstance(params, dict):
            return [ConfigIssue("config.outputParameters", "outputParameters must be an object of name: template")]
        return [
            ConfigIssue(f"config.outputParameters.{name}", "an output parameter name must be a non-empty string")
            for name in params
            if not name
        ]

    async def execute(
        self, config: Mapping[str, Any], context: Mapping[str, Any], helpers: NodeHelpers
    ) -> HandlerResult:
        return HandlerResult(output=dict(config.get("outputParameters") or {}), next_handle=None)
