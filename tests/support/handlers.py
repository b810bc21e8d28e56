"""Test-only node types, registered next to the built-in ones (validation accepts what the registry knows)."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

from flowdeck.domain.errors import NodeError
from flowdeck.handlers.base import HandlerResult, NodeHandler, NodeHelpers
from flowdeck.handlers.registry import HandlerRegistry, builtin_handlers


class StepHandler(NodeHandler):
    """A scriptable node: fails its first ``failTimes`` attempts, can sleep, returns ``output``.

    Output defaults to ``{"node": id, "attempt": n}``; handles ``success`` and ``error`` like ``python``.
    """

    type_name = "step"
    handles = ("success", "error")
    confined = True  # no effect outside the engine: chains of steps run on early-released decisions
    template_fields = ("output", "failTimes", "sleep")

    async def execute(
        self, config: Mapping[str, Any], context: Mapping[str, Any], helpers: NodeHelpers
    ) -> HandlerResult:
        if config.get("sleep"):
            await asyncio.sleep(float(config["sleep"]))
        if helpers.attempt <= int(config.get("failTimes", 0)):
            raise NodeError(
                f"planned failure on attempt {helpers.attempt}", retryable=bool(config.get("retryable", True))
            )
        output = config.get("output", {"node": helpers.node_id, "attempt": helpers.attempt})
        return HandlerResult(output=output, next_handle="success")


def make_test_registry() -> HandlerRegistry:
    return HandlerRegistry([*builtin_handlers(), StepHandler()])
