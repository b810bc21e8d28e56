"""``start``: the entry of every run; passes the run input on."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from flowdeck.handlers.base import HandlerResult, NodeHandler, NodeHelpers

__all__ = ("StartHandler",)


class StartHandler(NodeHandler):
    type_name = "start"
    confined = True
    handles = ("default",)

    async def execute(
        self, config: Mapping[str, Any], context: Mapping[str, Any], helpers: NodeHelpers
    ) -> HandlerResult:
        return HandlerResult(output={"started": True, "inputReceived": context.get("input")}, next_handle="default")
