"""One node of a run in one scope, per attempt: the data behind the editor's node details view."""

from __future__ import annotations

from typing import Any

from litestar.exceptions import NotFoundException, ValidationException

from flowdeck.api.node_detail_schemas import AttemptOut, ContextValueTruncatedOut, NodeDetailOut
from flowdeck.api.schemas import OutputTruncatedOut
from flowdeck.domain.graph import Graph
from flowdeck.domain.statuses import TERMINAL_RUN_STATUSES, NodeStatus, RunStatus
from flowdeck.engine.engine import Engine
from flowdeck.engine.output_view import ShownOutputs
from flowdeck.engine.plans import RunNotFoundError
from flowdeck.storage.attempt_fold import AttemptView, fold_attempts
from flowdeck.storage.records import InstanceRecord
from flowdeck.storage.run_queries import RunQueries
from flowdeck.validation.reads import node_reads

__all__ = ("NodeDetailService",)

_SENTINEL = "__node_"
"""Context keys the engine keeps for itself (SPEC §3): not shown."""


def _depth(graph: Graph, node_id: str) -> int:
    """How many loops run ``node_id`` (0 at top level): the parts of the iteration paths it runs in."""
    depth, loop_id = 0, graph.loop_of(node_id)
    while loop_id is not None:
        depth, loop_id = depth + 1, graph.loop_of(loop_id)
    return depth


class NodeDetailService:
    def __init__(self, engine: Engine, queries: RunQueries) -> None:
        self.engine = engine
        self.queries = queries

    async def detail(
        self, tenant_id: str, instance_id: str, node_id: str, iteration: str, attempt: int | None
    ) -> NodeDetailOut:
        run = await self.queries.get_run(tenant_id, instance_id)
        if run is None:
            raise NotFoundException(detail=f"run {instance_id} not found")
        graph = await self._graph(run)
        node = graph.nodes.get(node_id)
        if node is None:
            raise NotFoundException(detail=f"run {instance_id} has no node {node_id!r}")
        _check_scope(graph, node_id, iteration)
        attempts = fold_attempts(await self.queries.scope_rows(run.id, node_id, iteration), run)
        shown_attempt = _pick(attempts, attempt, node_id)
        context = await self.engine.state.assemble_context(
            run.id,
            graph.ancestors(node_id),
            iteration,
            before_log_id=shown_attempt.started_log_id if shown_attempt else None,
        )
        shown = ShownOutputs(run.id)
        output, truncated = shown.show(shown_attempt.output if shown_attempt else None, node_id, iteration)
        values, values_truncated = _shown_context(context, graph, node_id, iteration, shown)
        return NodeDetailOut(
            node_id=node_id,
            iteration=iteration,
            attempt=shown_attempt.attempt if shown_attempt else 0,
            status=shown_attempt.status if shown_attempt else _never_started(run),
            attempts=[
                AttemptOut(
                    attempt=a.attempt,
                    status=a.status,
                    started_at=a.started_at,
                    completed_at=a.completed_at,
                    worker_id=a.worker_id,
                    error=a.error,
                    retry=a.retry,
                    attempt_in_retry=a.attempt_in_retry,
                )
                for a in attempts
            ],
            input=values,
            input_truncated=values_truncated or None,
            reads=node_reads(self.engine.registry.get(node.type), node.config),
            config=node.config,
            output=output,
            output_truncated=None if truncated is None else OutputTruncatedOut(**truncated),
            error=shown_attempt.error if shown_attempt else None,
            logs=shown_attempt.logs if shown_attempt else None,
            pinned=shown_attempt.pinned if shown_attempt else False,
        )

    async def _graph(self, run: InstanceRecord) -> Graph:
        try:
            return (await self.engine.plans.get(run.id)).graph
        except RunNotFoundError as exc:
            raise NotFoundException(detail=f"the graph of run {run.id} can no longer be read: {exc}") from exc


def _check_scope(graph: Graph, node_id: str, iteration: str) -> None:
    """A body node is shown per iteration (``3``, ``3.1`` for nested loops), a top-level node without one."""
    depth = _depth(graph, node_id)
    given = len(iteration.split(".")) if iteration else 0
    if given == depth:
        return
    if depth == 0:
        message = f"node {node_id!r} does not run in a loop: leave out iteration"
    else:
        example = ".".join(["0"] * depth)
        message = f"node {node_id!r} runs in loop iterations: iteration must have {depth} part(s), e.g. {example!r}"
    raise ValidationException(detail=message, extra=[{"key": "iteration", "message": message}])


def _pick(attempts: list[AttemptView], attempt: int | None, node_id: str) -> AttemptView | None:
    if attempt is None:
        return attempts[-1] if attempts else None
    for each in attempts:
        if each.attempt == attempt:
            return each
    raise NotFoundException(detail=f"node {node_id!r} has no attempt {attempt} here")


def _never_started(run: InstanceRecord) -> NodeStatus:
    if run.status in TERMINAL_RUN_STATUSES:
        return NodeStatus.SKIPPED if run.status is RunStatus.COMPLETED else NodeStatus.CANCELLED
    return NodeStatus.PENDING


def _shown_context(
    context: dict[str, Any], graph: Graph, node_id: str, iteration: str, shown: ShownOutputs
) -> tuple[dict[str, Any], dict[str, ContextValueTruncatedOut]]:
    """Each context value in full while the answer stays bounded; a large one as its size and preview,
    with the address of the output it came from."""
    producers = {graph.nodes[a].variable: a for a in graph.ancestors(node_id)}
    parts = iteration.split(".") if iteration else []
    values: dict[str, Any] = {}
    truncated: dict[str, ContextValueTruncatedOut] = {}
    for key, value in context.items():
        if key.startswith(_SENTINEL):
            continue
        producer = producers.get(key)
        scope = ".".join(parts[: _depth(graph, producer)]) if producer else ""
        values[key], cut = shown.show(value, producer, scope)
        if cut is not None:
            href = cut["href"] if producer else None
            truncated[key] = ContextValueTruncatedOut(bytes=cut["bytes"], preview=cut["preview"], href=href)
    return values, truncated
