"""The portable scheduling rules: one decision of one run, inside one transaction (seed 001).

A ``Decision`` holds what every rule needs — the transaction (whose CAS it already won), the run's
plan, the effects to announce after the commit and the worker that may take the first job it starts
— so its methods take only what differs per call: record a completion or a failure, resolve edges
(advance), skip, dispatch, complete pinned nodes, expand and settle loops, finish or fail the run.

PostgreSQL takes the commonest of these decisions in one statement each (engine/one_statement.py,
storage/statements_postgres.py), writing exactly the same rows; a rule changed here must be changed
there too, and tests/integration/test_one_statement_equivalence.py fails until it is.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from flowdeck.domain.graph import Graph
from flowdeck.domain.scopes import child_scope, item_index, parent_scope
from flowdeck.domain.statuses import EventType, NodeStatus, RunStatus
from flowdeck.engine.cas import DuplicateDeliveryError
from flowdeck.engine.effects import Effects, job_key
from flowdeck.engine.outcomes import Completed, Failed, completed_payload
from flowdeck.engine.plans import RunPlan
from flowdeck.engine.retry import backoff_seconds
from flowdeck.engine.run_budget import budget_failure, charge_of
from flowdeck.engine.run_timing import RunTiming, deadline_for
from flowdeck.engine.scheduling import EdgeCounts, Verdict, edge_deltas, node_verdict
from flowdeck.handlers.loop import loop_concurrency
from flowdeck.settings import DEFAULT_MAX_RUN_BYTES
from flowdeck.storage.flow import clear_waiting
from flowdeck.storage.jobs import NewJob
from flowdeck.storage.log_fold import unfinished_nodes
from flowdeck.storage.log_rows import completed_event, started_event
from flowdeck.storage.notices import FAILURE, add_notice
from flowdeck.storage.records import Job, LogEvent
from flowdeck.storage.run_bytes import result_logged
from flowdeck.storage.run_labels import write_labels
from flowdeck.storage.state import StateTransaction

__all__ = ("Decision", "Dispatch", "end_run", "fail_run", "run_status_event")


@dataclass(frozen=True, slots=True)
class Dispatch:
    node_id: str
    attempt: int = 1


class Decision:
    def __init__(
        self,
        tx: StateTransaction,
        plan: RunPlan,
        effects: Effects,
        *,
        owner: str | None,
        lease_seconds: float,
        max_run_bytes: int = DEFAULT_MAX_RUN_BYTES,
    ) -> None:
        self.tx = tx
        self.plan = plan
        self.effects = effects
        self.owner = owner
        """The worker that may take (lease) the first job this decision starts, if due now."""
        self.lease_seconds = lease_seconds
        self.max_run_bytes = max_run_bytes
        """FLOWDECK_MAX_RUN_BYTES: what the run may store in all (engine/run_budget.py)."""
        self.refused_output = False
        """A completion was refused for the budget and decided as a failure: this decision leases no job,
        since the worker would otherwise build its next context from the output that was not stored."""

    @property
    def graph(self) -> Graph:
        return self.plan.graph

    # -- results -----------------------------------------------------------------------------------
    async def record_completion(self, job: Job, outcome: Completed, status: RunStatus) -> Job | None:
        node = self.graph.node(job.node_id)
        charge = charge_of(self.graph, node.id, outcome)
        if not await self._charge(job.instance_id, charge):
            if await result_logged(self.tx.conn, job):
                raise DuplicateDeliveryError  # nothing was written
            self.refused_output = True
            return await self.record_failure(job, budget_failure(node.id, charge, self.max_run_bytes), status)
        if outcome.iterations is not None and self.graph.is_loop(node.id):
            return await self.start_loop(job, outcome.iterations, status)
        event = completed_event(job, node.variable, completed_payload(outcome, end=node.type == "end"))
        logged, job_removed = await self.tx.record_result(event, job)
        if not logged:
            await self._charge(job.instance_id, -charge)  # nothing was written: a batch goes on without it
            raise DuplicateDeliveryError
        if outcome.labels:
            await write_labels(self.tx.conn, job.instance_id, outcome.labels)
        if not job_removed:
            return None  # a late result of a replaced attempt: recorded, shown nowhere (log_fold.superseded)
        self.effects.node(job_key(job), NodeStatus.COMPLETED, job.attempt, output=outcome.output)
        if status is not RunStatus.RUNNING:
            return None  # a late result (the run failed or was cancelled): recorded, starts nothing
        claimed = await self.advance(job.iteration, [(job.node_id, outcome.handle)], outcome.queue_delay, claim=True)
        closing = self.graph.closes_iteration(job.node_id)
        settled = await self.settle(
            job.iteration, self.graph.loop_of(job.node_id), claim=claimed is None, scope_is_idle=closing
        )
        return claimed or settled

    async def _charge(self, instance_id: str, charge: int) -> bool:
        """Count ``charge`` bytes against the run's output budget, if they fit (engine/run_budget.py)."""
        return await self.tx.charge_output(instance_id, charge, self.max_run_bytes)

    async def record_failure(self, job: Job, outcome: Failed, status: RunStatus) -> Job | None:
        graph, node_id, tx = self.graph, job.node_id, self.tx
        policy = graph.retry_policy(node_id)
        used = job.attempt - job.retry_base + 1
        will_retry = outcome.retryable and used < policy.max_attempts and status is RunStatus.RUNNING
        delay = backoff_seconds(policy, used) if will_retry else 0.0
        error = {"type": outcome.error_type, "message": outcome.message, **(outcome.details or {})}
        payload: dict[str, Any] = {"error": error, "retry": will_retry}
        if not outcome.retryable:
            payload["retryable"] = False  # a caller of this run (sub-workflows) need not retry it either
        if will_retry:
            payload["nextAttemptAt"] = tx.now + delay
        event = LogEvent(
            job.instance_id,
            EventType.NODE_FAILED,
            node_id=node_id,
            iteration=job.iteration,
            node_status=(NodeStatus.RETRYING if will_retry else NodeStatus.FAILED).value,
            payload=payload,
            error_message=outcome.message,
            node_attempt=job.attempt,
        )
        if await tx.log_event(event) is None:
            raise DuplicateDeliveryError
        key = job_key(job)
        if will_retry:
            if await tx.jobs.reschedule(job, delay):
                self.effects.node(
                    key, NodeStatus.RETRYING, job.attempt, error=outcome.message, next_attempt_at=tx.now + delay
                )
                self.effects.wake_at.append(tx.now + delay)
            return None
        if not await tx.jobs.delete(job):
            return None  # a late failure of a replaced attempt: recorded, shown nowhere
        if status is not RunStatus.RUNNING:
            self.effects.node(key, NodeStatus.FAILED, job.attempt, error=outcome.message)
            return None
        node = graph.node(node_id)
        if node.error_handling == "continue" and _has_error_edge(graph, node_id):
            await tx.log_event(
                LogEvent(
                    job.instance_id,
                    EventType.NODE_COMPLETED,
                    node_id=node_id,
                    iteration=job.iteration,
                    node_status=NodeStatus.COMPLETED.value,
                    output_variable=node.variable,
                    payload={"output": {"error": error}, "handle": "error"},
                    node_attempt=job.attempt,
                )
            )
            self.effects.node(key, NodeStatus.COMPLETED, job.attempt, output={"error": error})
            claimed = await self.advance(job.iteration, [(node_id, "error")], None, claim=not self.refused_output)
            await self.settle(job.iteration, graph.loop_of(node_id))
            return claimed
        self.effects.node(key, NodeStatus.FAILED, job.attempt, error=outcome.message)
        attempts = f"{used} attempt{'s' if used != 1 else ''}"
        await self.fail(f"node '{node_id}' failed after {attempts}: {outcome.message}")
        return None

    # -- edges -------------------------------------------------------------------------------------
    async def advance(
        self, iteration: str, finished: list[tuple[str, str | None]], delay: float | None, *, claim: bool = False
    ) -> Job | None:
        """Resolve the outgoing edges of finished nodes; skip and dispatch what that decides."""
        graph = self.graph
        to_run: list[Dispatch] = []
        frontier = finished
        while frontier:
            immediate: dict[str, EdgeCounts] = {}
            barrier: dict[str, EdgeCounts] = {}
            for node_id, handle in frontier:
                for target, (resolved, taken) in edge_deltas(graph, node_id, handle).items():
                    bucket = immediate if graph.has_single_source(target) else barrier
                    r, t = bucket.get(target, (0, 0))
                    bucket[target] = (r + resolved, t + taken)
            counts = {**immediate, **await self.tx.bump_barriers(self.plan.instance_id, iteration, barrier)}
            skipped: list[str] = []
            for target, after in counts.items():
                newly_taken = (immediate.get(target) or barrier[target])[1]
                verdict = node_verdict(graph, target, after, newly_taken)
                if verdict is Verdict.RUN:
                    to_run.append(Dispatch(target))
                elif verdict is Verdict.SKIP:
                    skipped.append(target)
                elif after[0] < len(graph.edges_into(target)):
                    self.effects.awaiting_edges = True
            await self.skip(iteration, skipped)
            frontier = [(node_id, None) for node_id in skipped]
        return await self.dispatch(iteration, to_run, delay, claim=claim)

    async def skip(self, iteration: str, node_ids: Sequence[str]) -> None:
        if not node_ids:
            return
        instance_id = self.plan.instance_id
        await self.tx.log_event_bulk(
            [
                LogEvent(
                    instance_id,
                    EventType.NODE_SKIPPED,
                    node_id=n,
                    iteration=iteration,
                    node_status=NodeStatus.SKIPPED.value,
                )
                for n in node_ids
            ]
        )
        for node_id in node_ids:
            self.effects.node((instance_id, node_id, iteration), NodeStatus.SKIPPED, 0)

    # -- dispatching -------------------------------------------------------------------------------
    async def dispatch(
        self, iteration: str, dispatches: Sequence[Dispatch], delay: float | None, *, claim: bool = False
    ) -> Job | None:
        """Log NODE_DISPATCHED and queue a job for each node; pinned nodes complete at once instead."""
        if not dispatches:
            return None
        plan, tx, effects = self.plan, self.tx, self.effects
        if len(dispatches) == 1 and dispatches[0].node_id not in plan.pinned:  # a chain's step: the common case
            return await self._dispatch_one(iteration, dispatches[0], delay, claim=claim)
        inserted = set(
            await tx.log_event_bulk(
                [
                    LogEvent(
                        plan.instance_id,
                        EventType.NODE_DISPATCHED,
                        node_id=d.node_id,
                        iteration=iteration,
                        node_status=NodeStatus.DISPATCHED.value,
                        payload=None if d.node_id in plan.pinned else self._due_payload(delay),
                        node_attempt=d.attempt,
                    )
                    for d in dispatches
                ]
            )
        )
        fresh = [d for d in dispatches if d.node_id in inserted]  # the dispatch guard: never the same node twice
        pinned = [d for d in fresh if d.node_id in plan.pinned]
        queued = [d for d in fresh if d.node_id not in plan.pinned]
        owner = self.owner if claim and not delay and queued else None
        jobs = await tx.jobs.add(
            [
                NewJob(
                    plan.instance_id,
                    d.node_id,
                    iteration,
                    d.attempt,
                    d.attempt,
                    delay or 0.0,
                    lease_owner=owner if i == 0 else None,
                    lease_seconds=self.lease_seconds,
                    tenant_id=plan.tenant_id,
                    priority=plan.priority,
                )
                for i, d in enumerate(queued)
            ]
        )
        effects.jobs_added += len(jobs)
        claimed: Job | None = None
        for job in jobs:
            effects.node(job_key(job), NodeStatus.DISPATCHED, job.attempt, next_attempt_at=self._due(delay))
            if owner and job.node_id == queued[0].node_id:
                claimed = job
        if claimed is not None:
            await tx.log_event(started_event(claimed))
            effects.node(job_key(claimed), NodeStatus.RUNNING, claimed.attempt)
        if len(jobs) > (claimed is not None):
            effects.wake_at.append(tx.now + (delay or 0.0))
        for d in pinned:
            follow = await self._complete_pinned(iteration, d)
            claimed = claimed or follow
        return claimed

    async def _dispatch_one(
        self, iteration: str, dispatch: Dispatch, delay: float | None, *, claim: bool
    ) -> Job | None:
        owner = self.owner if claim and not delay else None
        job = await self.tx.dispatch_one(
            NewJob(
                self.plan.instance_id,
                dispatch.node_id,
                iteration,
                dispatch.attempt,
                dispatch.attempt,
                delay or 0.0,
                lease_owner=owner,
                lease_seconds=self.lease_seconds,
                tenant_id=self.plan.tenant_id,
                priority=self.plan.priority,
            )
        )
        if job is None:
            return None
        self.effects.jobs_added += 1
        self.effects.node(job_key(job), NodeStatus.DISPATCHED, job.attempt, next_attempt_at=self._due(delay))
        if owner:
            self.effects.node(job_key(job), NodeStatus.RUNNING, job.attempt)
            return job
        self.effects.wake_at.append(self.tx.now + (delay or 0.0))
        return None

    async def _complete_pinned(self, iteration: str, dispatch: Dispatch) -> Job | None:
        """A pinned node (test runs only) completes at once with its pinned output, logged as such."""
        graph, node_id = self.graph, dispatch.node_id
        node = graph.node(node_id)
        output = self.plan.pinned[node_id]
        handle = _pinned_handle(graph, node_id, output)
        payload: dict[str, Any] = {"output": output, "handle": handle, "pinned": True}
        if node.type == "end":
            payload["end"] = True
        await self.tx.log_event(
            LogEvent(
                self.plan.instance_id,
                EventType.NODE_COMPLETED,
                node_id=node_id,
                iteration=iteration,
                node_status=NodeStatus.COMPLETED.value,
                output_variable=node.variable,
                payload=payload,
                node_attempt=dispatch.attempt,
            )
        )
        key = (self.plan.instance_id, node_id, iteration)
        self.effects.node(key, NodeStatus.COMPLETED, dispatch.attempt, output=output, pinned=True)
        return await self.advance(iteration, [(node_id, handle)], None)

    def _due(self, delay: float | None) -> float | None:
        """When a delayed dispatch falls due (a delay node's successors): shown while it waits."""
        return self.tx.now + delay if delay else None

    def _due_payload(self, delay: float | None) -> dict[str, float] | None:
        """A delayed NODE_DISPATCHED row says when the node falls due (the run's views show the wait)."""
        return {"dueAt": self.tx.now + delay} if delay else None

    # -- loops -------------------------------------------------------------------------------------
    async def start_loop(self, job: Job, items: list[Any], status: RunStatus) -> Job | None:
        """Expand a loop: one scope per item with its ``ctx.loop`` row, the first iterations started."""
        tx, plan = self.tx, self.plan
        if not await tx.jobs.delete(job):
            raise DuplicateDeliveryError  # expanded before, or taken over: nothing is written, not even its charge
        if status is not RunStatus.RUNNING:
            return None
        graph, loop_id, scope = self.graph, job.node_id, job.iteration
        count = len(items)
        started = min(loop_concurrency(graph.node(loop_id).config), count)
        if not await tx.start_loop(plan.instance_id, loop_id, scope, count, job.attempt):
            raise DuplicateDeliveryError
        await tx.log_event_bulk(
            [
                LogEvent(
                    plan.instance_id,
                    EventType.SYSTEM_SET,
                    node_id=loop_id,
                    iteration=child_scope(scope, index),
                    output_variable="loop",
                    payload={"loop": {"item": item, "index": index, "count": count}},
                    node_attempt=job.attempt,
                )
                for index, item in enumerate(items)
            ]
        )
        claimed: Job | None = None
        for index in range(started):
            got = await self.advance(child_scope(scope, index), [(loop_id, "loop")], None, claim=claimed is None)
            claimed = claimed or got
        if count == 0 or not graph.bodies[loop_id]:
            await self.settle(child_scope(scope, 0), loop_id, loop_is_empty=count == 0)
        else:
            for index in range(started):  # a body made only of pinned nodes finishes without a job
                if not self.effects.jobs_added:
                    await self.settle(child_scope(scope, index), loop_id)
        return claimed

    async def settle(
        self,
        scope: str,
        loop_id: str | None,
        *,
        claim: bool = False,
        loop_is_empty: bool = False,
        scope_is_idle: bool = False,
    ) -> Job | None:
        """After a decision in ``scope``: finish what has no work left — iterations, loops, the run.

        Returns the job of a next iteration leased to the owner (with ``claim``), if it started one.
        ``scope_is_idle``: the node that just finished closes its iteration (``Graph.closes_iteration``),
        so no job of it can be left and the check is skipped.
        """
        graph, instance_id, tx = self.graph, self.plan.instance_id, self.tx
        while not self.effects.jobs_added:
            if loop_id is None:
                await self.finish_if_done()
                return None
            parent = parent_scope(scope)
            if loop_is_empty:
                count, attempt = 0, await tx.loop_attempt(instance_id, loop_id, parent)
            else:
                if not scope_is_idle and await tx.has_scope_jobs(instance_id, graph.bodies[loop_id], scope):
                    return None
                count, finished, attempt = await tx.finish_iteration(instance_id, loop_id, parent)
                next_index = finished + loop_concurrency(graph.node(loop_id).config) - 1
                if next_index < count:
                    scope = child_scope(parent, next_index)
                    claimed = await self.advance(scope, [(loop_id, "loop")], None, claim=claim)
                    if claimed is not None:
                        return claimed
                    continue
                if finished < count:
                    return None
            await self.complete_loop(loop_id, parent, count, attempt)
            scope, loop_id, loop_is_empty, scope_is_idle = parent, graph.loop_of(loop_id), False, False
        return None

    async def complete_loop(self, loop_id: str, scope: str, count: int, attempt: int) -> None:
        """Every iteration is done: the loop completes on ``done`` with the iterations' results in item order."""
        graph, instance_id = self.graph, self.plan.instance_id
        sinks = graph.body_sinks(loop_id)
        by_index: dict[int, dict[str, Any]] = {}
        for node_id, iteration, output in await self.tx.completed_outputs(instance_id, sinks) if sinks else []:
            if parent_scope(iteration) == scope:
                by_index.setdefault(item_index(iteration), {})[node_id] = output
        results = [
            (by_index.get(i, {}).get(sinks[0]) if len(sinks) == 1 else by_index.get(i, {})) if sinks else None
            for i in range(count)
        ]
        output = {"items": results, "count": count}
        await self.tx.log_event(
            LogEvent(
                instance_id,
                EventType.NODE_COMPLETED,
                node_id=loop_id,
                iteration=scope,
                node_status=NodeStatus.COMPLETED.value,
                output_variable=graph.node(loop_id).variable,
                payload={"output": output, "handle": "done"},
                node_attempt=attempt,
            )
        )
        self.effects.node((instance_id, loop_id, scope), NodeStatus.COMPLETED, attempt, output=output)
        await self.advance(scope, [(loop_id, "done")], None)

    # -- the run -----------------------------------------------------------------------------------
    async def begin_run(self) -> RunStatus:
        """A scheduled run's start node ran: RUNNING from now, failing at the earlier of its timeout and deadline."""
        instance_id, tx = self.plan.instance_id, self.tx
        requested = RunTiming.from_payload(await tx.first_status_payload(instance_id))
        await tx.begin_run(
            instance_id, deadline_for(tx.now, self.graph.definition.options.timeout_seconds, requested.deadline_at)
        )
        self.effects.run(instance_id, RunStatus.RUNNING)
        return RunStatus.RUNNING

    async def finish_if_done(self) -> None:
        """Nothing queued, leased or waiting any more: every node is terminal, so the run is COMPLETED."""
        if self.effects.jobs_added or self.effects.awaiting_edges:
            return
        instance_id = self.plan.instance_id
        output = await self.tx.outputs_if_idle(instance_id)
        if output is None:
            return
        if await self.tx.set_run_status(instance_id, RunStatus.COMPLETED, output=output):
            self.effects.wake_at.append(self.tx.now)  # the node that called this run resumes now
        self.effects.run(instance_id, RunStatus.COMPLETED, output=output)

    async def fail(self, message: str) -> None:
        """Fail fast: drop every queued job so nothing new starts; in-flight results are still recorded."""
        await fail_run(self.tx, self.plan.instance_id, message, self.effects)


async def fail_run(tx: StateTransaction, instance_id: str, message: str, effects: Effects) -> None:
    """Fail a run (no plan needed: a timeout or recovery fails runs whose graph it never loads)."""
    await end_run(tx, instance_id, RunStatus.FAILED, message, effects, error=message)


async def end_run(
    tx: StateTransaction,
    instance_id: str,
    status: RunStatus,
    reason: str,
    effects: Effects,
    *,
    error: str | None = None,
) -> None:
    """End a run that did not complete: its queued jobs go, every node not yet terminal (loops and
    their iterations included) gets a NODE_CANCELLED row, then the run takes ``status``."""
    await tx.jobs.delete_for_instance(instance_id)
    await clear_waiting(tx.conn, instance_id)  # a queued or debounced run leaves its queue
    unfinished = unfinished_nodes(await tx.node_rows(instance_id))
    await tx.log_event_bulk(
        [
            LogEvent(
                instance_id,
                EventType.NODE_CANCELLED,
                node_id=node_id,
                iteration=iteration,
                node_status=NodeStatus.CANCELLED.value,
                payload={"reason": reason},
                node_attempt=attempt,
            )
            for node_id, iteration, attempt in unfinished
        ]
    )
    for node_id, iteration, attempt in unfinished:
        effects.node((instance_id, node_id, iteration), NodeStatus.CANCELLED, attempt)
    if await tx.set_run_status(instance_id, status, error=error, reason=reason):
        effects.wake_at.append(tx.now)  # the node that called this run resumes now
    if status is RunStatus.FAILED:
        await add_notice(tx.conn, instance_id, FAILURE, tx.now)  # options.onFailure (flowdeck/notifications)
    effects.run(instance_id, status, error=error)


def run_status_event(instance_id: str, status: RunStatus, extra: dict[str, Any] | None = None) -> LogEvent:
    payload = {"status": status.value, **(extra or {})}
    return LogEvent(instance_id, EventType.RUN_STATUS, node_status=status.value, payload=payload)


def _has_error_edge(graph: Graph, node_id: str) -> bool:
    return any(graph.handle_of(edge) == "error" for edge in graph.edges_from(node_id))


def _pinned_handle(graph: Graph, node_id: str, output: Any) -> str | None:
    """The handle a pinned node leaves from: a condition's pinned ``branch``, else the primary handle."""
    node = graph.node(node_id)
    if node.type == "condition" and isinstance(output, dict) and isinstance(output.get("branch"), str):
        return str(output["branch"])
    if node.type == "end":
        return None
    return graph.default_handles.get(node.type, "default")
