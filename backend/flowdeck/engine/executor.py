"""Runs one node attempt: context, template resolution, the handler under its timeout watchdog."""

from __future__ import annotations

import asyncio
import functools
import logging
import time
from collections import OrderedDict
from collections.abc import Mapping
from typing import Any

from flowdeck.domain.definition import NodeSpec
from flowdeck.domain.errors import NodeError
from flowdeck.domain.graph import Graph
from flowdeck.domain.labels import LabelError, LabelLimits
from flowdeck.domain.scopes import item_index, parent_scope
from flowdeck.engine.loaded_once import LoadedOnce
from flowdeck.engine.log_scope import current_node
from flowdeck.engine.observer import EngineObserver, NullObserver
from flowdeck.engine.outcomes import Called, Completed, Failed, NodeOutcome, Parked
from flowdeck.engine.plans import PlanCache, RunPlan
from flowdeck.handlers.base import HandlerResult, NodeHandler, NodeHelpers
from flowdeck.handlers.registry import HandlerRegistry
from flowdeck.sandbox.templates import TemplateError, render
from flowdeck.storage.records import Job
from flowdeck.storage.run_labels import count_labels
from flowdeck.storage.state import StateManager

__all__ = ("NodeExecutor",)

log = logging.getLogger(__name__)


_SHARED_CONTEXTS = 1024
_LOOPS_KEPT = 64

ContextKey = tuple[str, str, frozenset[str]]
"""(run, iteration scope, ancestors): nodes with the same key fold the same context."""


class NodeExecutor:
    def __init__(
        self,
        state: StateManager,
        plans: PlanCache,
        registry: HandlerRegistry,
        observer: EngineObserver | None = None,
        label_limits: LabelLimits | None = None,
    ) -> None:
        self.state = state
        self.label_limits = label_limits or LabelLimits()
        self.plans = plans
        self.registry = registry
        self.observer: EngineObserver = observer or NullObserver()
        self._contexts: LoadedOnce[ContextKey, dict[str, Any]] = LoadedOnce(_SHARED_CONTEXTS)
        """Recent contexts by what they fold, so siblings (a fan-out's branches) read the log once, also
        when a worker claims a batch of them that all start at the same moment."""
        self._loops: OrderedDict[tuple[str, str, str], tuple[dict[str, Any], list[Any]]] = OrderedDict()
        """(run, loop, scope) -> the loop's context and items, for its iterations' first nodes."""

    async def run(
        self, job: Job, context: dict[str, Any] | None = None, *, leased_early: bool = False
    ) -> tuple[NodeOutcome, dict[str, Any] | None]:
        """Run one attempt; returns its outcome and the context it ran with.

        ``context`` may be passed when the caller already knows it (see ``context_for_successor``).
        ``leased_early``: the job was leased by a decision that may not be durable yet (early release,
        storage/database.py): reading its context from the log waits for that decision first.
        """
        plan = await self.plans.get(job.instance_id, priority=job.priority)
        node = plan.graph.node(job.node_id)
        current_node.set((job.instance_id, job.node_id, job.iteration))
        started = time.perf_counter()
        outcome, context = await self._attempt(job, plan, node, context, leased_early)
        kind = "failed" if isinstance(outcome, Failed) else "completed"
        self.observer.node_ran(node.type, time.perf_counter() - started, kind)
        return outcome, context

    async def _attempt(
        self, job: Job, plan: RunPlan, node: NodeSpec, context: dict[str, Any] | None, leased_early: bool
    ) -> tuple[NodeOutcome, dict[str, Any] | None]:
        max_attempts = plan.graph.retry_policy(node.id).max_attempts
        if job.takeovers > max_attempts:
            message = (
                f"node '{node.id}' was taken over {job.takeovers} times: the worker running it stopped (died, or"
                f" froze past its lease) more than maxAttempts ({max_attempts}) times"
            )
            return Failed("WorkerLost", message, retryable=False), None
        handler = self.registry.get(node.type)
        if handler is None:
            return Failed("UnknownNodeType", f"no handler for node type '{node.type}'", retryable=False), None
        timeout = plan.graph.timeout_seconds(node.id)
        helpers = NodeHelpers(
            instance_id=job.instance_id,
            tenant_id=plan.tenant_id,
            workflow_id=plan.workflow_id,
            node_id=node.id,
            iteration=job.iteration,
            attempt=job.attempt,
            timeout_seconds=timeout,
            is_test=plan.is_test,
            depth=plan.depth,
            label_limits=self.label_limits,
            wired_handles=frozenset(plan.graph.handle_of(edge) for edge in plan.graph.edges_from(node.id)),
            previous=tuple(
                dict.fromkeys((e.source, plan.graph.node(e.source).variable) for e in plan.graph.edges_into(node.id))
            ),
        )
        try:
            if context is None:
                context = await self._context(job, plan.graph, leased_early)
            config = _resolve_templates(handler, node.config, context)
            if not handler.confined:  # its effects leave the engine: what it follows must be durable first
                await self.state.settle()
            async with asyncio.timeout(timeout):
                result = await handler.execute(config, context, helpers)
        except NodeError as exc:
            return Failed(exc.error_type, exc.message, exc.retryable, exc.details), context
        except TemplateError as exc:
            return Failed("TemplateError", exc.message, retryable=False), context
        except TimeoutError:
            return Failed("Timeout", f"node '{node.id}' timed out after {timeout:g} s (timeoutSeconds)"), context
        except Exception as exc:
            log.exception("node %s of run %s raised", node.id, job.instance_id)
            return Failed(type(exc).__name__, str(exc) or repr(exc)), context
        handles = handler.output_handles(node.config)
        if result.next_handle is not None and result.next_handle not in handles:
            message = f"node '{node.id}' chose handle '{result.next_handle}', which a {node.type} node does not have"
            return Failed("InvalidHandle", message, retryable=False), context
        if result.call is not None:
            return Called(result.call), context
        if result.park is not None:
            return Parked(result.park), context
        return await self._completed(job, node.id, result), context

    async def _completed(self, job: Job, node_id: str, result: HandlerResult) -> Completed | Failed:
        """The attempt's result, with the labels it set if the run may carry them beside those it has."""
        labels = None
        if result.labels:
            async with self.state.db.read(snapshot=False) as conn:
                existing = await count_labels(conn, job.instance_id, except_names=result.labels)
            try:
                labels = self.label_limits.check(result.labels, field=f"node '{node_id}': ctx.label", existing=existing)
            except LabelError as exc:
                return Failed("LabelError", str(exc), retryable=False)
        return Completed(result.output, result.next_handle, result.queue_delay, result.logs, result.iterations, labels)

    async def context_for_successor(
        self, finished: Job, context: dict[str, Any] | None, outcome: NodeOutcome, successor: Job
    ) -> dict[str, Any] | None:
        """The successor's context built from the finished node's, when that is provably the same fold.

        True when the successor's ancestors are exactly the finished node's ancestors plus the
        finished node (a chain): then its context is the finished node's plus that node's output,
        and reading it back from the log would return the same thing. And for the first node of a
        loop iteration (``_iteration_context``).
        """
        if context is None or not isinstance(outcome, Completed) or successor.instance_id != finished.instance_id:
            return None
        graph = (await self.plans.get(finished.instance_id)).graph
        if outcome.iterations is not None:  # a loop expanded: its context is every iteration's, plus ctx.loop
            if finished.attempt == 1:
                key = (finished.instance_id, finished.node_id, finished.iteration)
                self._loops[key] = (context, outcome.iterations)
                if len(self._loops) > _LOOPS_KEPT:
                    self._loops.popitem(last=False)
            return self._iteration_context(graph, successor)
        if successor.iteration != finished.iteration:
            return self._iteration_context(graph, successor)
        if graph.ancestors(successor.node_id) != graph.ancestors(finished.node_id) | {finished.node_id}:
            return None
        node = graph.node(finished.node_id)
        known = {**context, node.variable: outcome.output, f"__node_{node.id}": True}
        self._share(successor, graph, known)
        return known

    def know_start_context(self, instance_id: str, graph: Graph, context: dict[str, Any]) -> None:
        """A run's start node's context, known from its committed first transaction (``state.run_context``):
        the attempt that runs it here reads nothing back."""
        self._remember(_shared_key_of(instance_id, "", graph.start_id, 1, graph), context)

    def forget(self) -> None:
        """Drop the kept contexts (they may hold outputs whose decisions were lost)."""
        self._contexts.clear()
        self._loops.clear()

    def _iteration_context(self, graph: Graph, job: Job) -> dict[str, Any] | None:
        """The context of a loop iteration's first node, from its loop's (kept when the loop expanded):
        the fold of its ancestors is the loop's own context, then the iteration's ``ctx.loop`` row."""
        loop_id = graph.loop_of(job.node_id)
        if loop_id is None or job.attempt != 1 or graph.has_any_join:
            return None
        if graph.ancestors(job.node_id) != graph.ancestors(loop_id) | {loop_id}:
            return None  # not where an iteration starts
        kept = self._loops.get((job.instance_id, loop_id, parent_scope(job.iteration)))
        if kept is None:
            return None
        base, items = kept
        index = item_index(job.iteration)
        if index >= len(items):
            return None
        return {**base, "loop": {"item": items[index], "index": index, "count": len(items)}}

    async def _context(self, job: Job, graph: Graph, leased_early: bool) -> dict[str, Any]:
        key = _shared_key(job, graph)
        if key is not None:
            known = self._contexts.known(key)
            if known is not None:
                return known
        if leased_early and not self.state.db.reads_see_released:  # SQLite: the rows may be in the open group
            await self.state.settle()
        # the fold's rows are all decided before any of the nodes sharing it is dispatched (``_shared_key_of``),
        # so a read under way for one of them serves this one too
        ancestors = graph.ancestors(job.node_id)
        read = functools.partial(self.state.assemble_context, job.instance_id, ancestors, job.iteration)
        if key is None:
            return await read()
        return await self._contexts.get(key, read)

    def _share(self, job: Job, graph: Graph, context: dict[str, Any]) -> None:
        self._remember(_shared_key(job, graph), context)

    def _remember(self, key: ContextKey | None, context: dict[str, Any]) -> None:
        if key is not None:
            self._contexts.put(key, context)


def _shared_key(job: Job, graph: Graph) -> ContextKey | None:
    return _shared_key_of(job.instance_id, job.iteration, job.node_id, job.attempt, graph)


def _shared_key_of(instance_id: str, iteration: str, node_id: str, attempt: int, graph: Graph) -> ContextKey | None:
    """The key under which a node's context can be shared, or ``None`` when it cannot.

    A node is dispatched once every ancestor is decided, and a decided node's outcome never changes
    (partial retry keeps completed outputs), so two nodes with the same ancestors in the same scope
    fold the same rows. Not so for a retried attempt (conservatively) or where a join runs on its
    first edge (its context depends on what had arrived).
    """
    if attempt != 1 or graph.has_any_join:
        return None
    return instance_id, iteration, graph.ancestors(node_id)


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
