"""Runs one node attempt: context, template resolution, the handler under its timeout watchdog."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from typing import Any

from flowdeck.engine.orchestrator import Completed, Failed, NodeOutcome
from flowdeck.engine.plans import PlanCache
from flowdeck.handlers.base import NodeError, NodeHandler, NodeHelpers
from flowdeck.handlers.registry import HandlerRegistry
from flowdeck.sandbox.templates import TemplateError, render
from flowdeck.storage.records import Job
from flowdeck.storage.state import StateManager

__all__ = ("NodeExecutor",)

log = logging.getLogger(__name__)


class NodeExecutor:
    def __init__(self, state: StateManager, plans: PlanCache, registry: HandlerRegistry) -> None:
        self.state = state
        self.plans = plans
        self.registry = registry

    async def run(self, job: Job) -> NodeOutcome:
        plan = await self.plans.get(job.instance_id)
        node = plan.graph.node(job.node_id)
        handler = self.registry.get(node.type)
        if handler is None:
            return Failed("UnknownNodeType", f"no handler for node type '{node.type}'", retryable=False)
        timeout = plan.graph.timeout_seconds(node.id)
        helpers = NodeHelpers(
            instance_id=job.instance_id,
            workflow_id=plan.workflow_id,
            node_id=node.id,
            iteration=job.iteration,
            attempt=job.attempt,
            timeout_seconds=timeout,
            is_test=plan.is_test,
        )
        try:
            context = await self.state.assemble_context(job.instance_id, plan.graph.ancestors(node.id), job.iteration)
            config = _resolve_templates(handler, node.config, context)
            async with asyncio.timeout(timeout):
                result = await handler.execute(config, context, helpers)
        except NodeError as exc:
            return Failed(exc.error_type, exc.message, exc.retryable)
        except TemplateError as exc:
            return Failed("TemplateError", exc.message, retryable=False)
        except TimeoutError:
            return Failed("Timeout", f"node '{node.id}' timed out after {timeout:g} s (timeoutSeconds)")
        except Exception as exc:
            log.exception("node %s of run %s raised", node.id, job.instance_id)
            return Failed(type(exc).__name__, str(exc) or repr(exc))
        handles = handler.output_handles(node.config)
        if result.next_handle is not None and result.next_handle not in handles:
            message = f"node '{node.id}' chose handle '{result.next_handle}', which a {node.type} node does not have"
            return Failed("InvalidHandle", message, retryable=False)
        return Completed(result.output, result.next_handle, result.queue_delay, result.logs)


def _resolve_templates(
    handler: NodeHandler, config: Mapping[str, Any], context: Mapping[str, Any]
) -> Mapping[str, Any]:
    if not handler.template_fields:
        return config
    resolved = dict(config)
    for name in handler.template_fields:
        if name in resolved:
            resolved[name] = render(resolved[name], context, path=f"config.{name}")
    return resolved
