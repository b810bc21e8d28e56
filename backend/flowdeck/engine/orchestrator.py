"""The orchestrator: every scheduling decision of a run, one atomic transaction each (seed 001).

A decision reads the instance version, claims the next one with a compare-and-swap and only then
writes: the node's result row (the unique index turns a duplicate delivery into a no-op), the
NODE_SKIPPED / NODE_DISPATCHED rows and the jobs of the nodes it starts. Everything commits
together, so a crash can never leave a node dispatched but not queued, or completed with nothing
started after it. A decision that loses the CAS rolls back and runs again on fresh state.
"""

from __future__ import annotations

import asyncio
import logging
import random
import uuid
from collections import OrderedDict
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any, TypeVar

from flowdeck.domain.graph import Graph
from flowdeck.domain.statuses import TERMINAL_RUN_STATUSES, EventType, NodeStatus, RunStatus
from flowdeck.engine.plans import PlanCache, RunNotFoundError, RunPlan
from flowdeck.engine.publisher import NodeUpdate, Publisher, RunUpdate, Update
from flowdeck.engine.retry import backoff_seconds
from flowdeck.engine.retry_plan import child_scope, parent_scope, plan_retry
from flowdeck.engine.scheduling import EdgeCounts, Verdict, edge_deltas, loop_entry, node_verdict, sole_successor
from flowdeck.handlers.loop import loop_concurrency
from flowdeck.storage.jobs import NewJob
from flowdeck.storage.records import Job, LogEvent
from flowdeck.storage.state import DEFINITION_KEY, PINNED_KEY, StateManager, StateTransaction, started_event
from flowdeck.storage.steps import ChainStep, ChainStepInput, EndStepInput, IterationStepInput, RunStart

__all__ = ("Completed", "Failed", "NodeOutcome", "Orchestrator", "RunStateError")

log = logging.getLogger(__name__)
T = TypeVar("T")

_MAX_CAS_ATTEMPTS = 200


@dataclass(frozen=True, slots=True)
class Completed:
    output: Any
    handle: str | None
    queue_delay: float | None = None
    logs: str | None = None
    iterations: list[Any] | None = None


@dataclass(frozen=True, slots=True)
class Failed:
    error_type: str
    message: str
    retryable: bool = True


NodeOutcome = Completed | Failed


class RunStateError(Exception):
    """The run is not in a state that allows this request (cancel a finished run, retry a running one)."""


class _DuplicateDeliveryError(Exception):
    """This result was delivered before: roll back, change nothing."""


class _CasConflictError(Exception):
    """Another decision moved the instance on first: roll back and decide again."""


@dataclass(slots=True)
class _Effects:
    """What to announce once the decision has committed (never before)."""

    now: float
    updates: list[Update] = field(default_factory=list)
    wake_at: list[float] = field(default_factory=list)
    stopped_runs: list[str] = field(default_factory=list)
    jobs_added: int = 0
    awaiting_edges: bool = False
    """A target still waits for an unresolved edge: something upstream of it is queued or running."""

    def node(self, job_or_id: tuple[str, str, str], status: NodeStatus, attempt: int, **extra: Any) -> None:
        instance_id, node_id, iteration = job_or_id
        self.updates.append(NodeUpdate(instance_id, node_id, iteration, status, attempt, self.now, **extra))

    def run(self, instance_id: str, status: RunStatus, output: Any = None, error: str | None = None) -> None:
        self.updates.append(RunUpdate(instance_id, status, self.now, output, error))

    @property
    def run_status(self) -> RunStatus | None:
        """The run status this decision set last, if it set one."""
        return next((u.status for u in reversed(self.updates) if isinstance(u, RunUpdate)), None)

    def absorb(self, other: _Effects) -> None:
        self.updates += other.updates
        self.wake_at += other.wake_at
        self.stopped_runs += other.stopped_runs
        self.jobs_added += other.jobs_added


@dataclass(frozen=True, slots=True)
class _Delivery:
    """A node attempt's result waiting for its run's decision."""

    job: Job
    outcome: NodeOutcome
    claim_for: str | None
    claim_any: bool
    done: asyncio.Future[Job | None]


class _LeaderGoneError(Exception):
    """The task deciding a batch was cancelled before it reached this delivery."""


@dataclass(slots=True)
class _RunLock:
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    users: int = 0


@dataclass(frozen=True, slots=True)
class _Dispatch:
    node_id: str
    attempt: int = 1


class Orchestrator:
    def __init__(
        self,
        state: StateManager,
        plans: PlanCache,
        publisher: Publisher,
        *,
        lease_seconds: float = 30.0,
    ) -> None:
        self.state = state
        self.plans = plans
        self.publisher = publisher
        self.lease_seconds = lease_seconds
        self.job_listeners: list[Callable[[float], None]] = []
        """Called with the due time of newly queued jobs (in-process wake-ups)."""
        self.stop_listeners: list[Callable[[str], None]] = []
        """Called with the id of a cancelled or deleted run (stop its in-flight nodes)."""
        self._run_locks: dict[str, _RunLock] = {}
        self._versions = _KnownVersions()
        self._deliveries: dict[str, list[_Delivery]] = {}
        """Per run: results waiting while one of its decisions is being taken (see ``handle_result``)."""

    # -- starting ----------------------------------------------------------------------------------
    async def start_run(
        self,
        *,
        tenant_id: str,
        graph: Graph,
        run_input: Any = None,
        workflow_id: str | None = None,
        workflow_version: int | None = None,
        test_definition: Any = None,
        pinned: Mapping[str, Any] | None = None,
        trigger: str = "api",
        instance_id: str | None = None,
    ) -> str:
        """Create a run and queue its start node, in one transaction. Test runs pass ``test_definition``."""
        is_test = test_definition is not None
        instance_id = instance_id or str(uuid.uuid4())
        plan = RunPlan(instance_id, tenant_id, workflow_id, is_test, graph, dict(pinned or {}) if is_test else {})
        now = None
        if not is_test:  # where the store offers it (PostgreSQL), the same rows in one statement
            start = RunStart(
                instance_id,
                tenant_id,
                workflow_id,
                workflow_version,
                trigger,
                run_input,
                graph.definition.options.timeout_seconds,
                graph.start_id,
            )
            now = await self.state.start_production_run(start)
        if now is not None:
            effects = _Effects(now)
            effects.run(instance_id, RunStatus.RUNNING)
            effects.node((instance_id, graph.start_id, ""), NodeStatus.DISPATCHED, 1)
            effects.wake_at.append(now)
            self.plans.remember(plan)
            self._versions.remember(instance_id, 1)
            self._announce(effects)
            return instance_id
        async with self.state.transaction() as tx:
            effects = _Effects(tx.now)
            await tx.create_instance(
                instance_id=instance_id,
                tenant_id=tenant_id,
                workflow_id=workflow_id,
                workflow_version=workflow_version,
                is_test=is_test,
                trigger=trigger,
                run_input=run_input,
                timeout_seconds=graph.definition.options.timeout_seconds,
            )
            events = [LogEvent(instance_id, EventType.INPUT_SET, payload={"input": run_input})]
            if is_test:
                events.append(
                    LogEvent(
                        instance_id,
                        EventType.SYSTEM_SET,
                        output_variable=DEFINITION_KEY,
                        payload={DEFINITION_KEY: test_definition, PINNED_KEY: plan.pinned},
                    )
                )
            events.append(_run_status_event(instance_id, RunStatus.RUNNING))
            await tx.log_event_bulk(events)
            effects.run(instance_id, RunStatus.RUNNING)
            await self._dispatch(tx, plan, "", [_Dispatch(graph.start_id)], None, None, effects)
            await self._finish_if_done(tx, plan, effects)
        self.plans.remember(plan)
        self._versions.remember(instance_id, 1)
        self._announce(effects)
        return instance_id

    # -- results -----------------------------------------------------------------------------------
    async def handle_result(
        self, job: Job, outcome: NodeOutcome, *, claim_for: str | None = None, claim_any: bool = False
    ) -> Job | None:
        """Record a node attempt's outcome and take the decision it leads to.

        With ``claim_for`` the first node this starts (if due now) is leased to that worker in the same
        transaction and returned, so a chain runs without a claim round trip between its nodes. When it
        starts none and ``claim_any`` is set (the worker has more due work than slots), the next due
        job of any run is leased instead: going on with it saves the claim transaction the freed slot
        would cost.

        Results of one run that arrive while a decision of that run is being taken wait for it and
        are then decided together, in one transaction (one compare-and-swap, one commit), each as it
        would be alone and in arrival order: the branches of a fan-out finishing at once cost one
        commit, not one each.
        """
        delivery = _Delivery(job, outcome, claim_for, claim_any, asyncio.get_running_loop().create_future())
        if isinstance(outcome, Completed) and outcome.iterations is not None:
            return await self._decide_alone(delivery)  # a loop's expansion is never batched
        queue = self._deliveries.get(job.instance_id)
        if queue is not None:  # a decision of this run is under way: join the next batch
            queue.append(delivery)
            try:
                return await delivery.done
            except _LeaderGoneError:
                return await self.handle_result(job, outcome, claim_for=claim_for, claim_any=claim_any)
        queue = self._deliveries[job.instance_id] = [delivery]
        try:
            while queue:
                batch = list(queue)
                await self._decide_batch(batch)
                del queue[: len(batch)]
        finally:
            del self._deliveries[job.instance_id]
            for left in queue:  # this task was cancelled mid-way: the others decide for themselves
                if not left.done.done():
                    left.done.set_exception(_LeaderGoneError())
        return delivery.done.result()

    async def _decide_batch(self, batch: list[_Delivery]) -> None:
        """Decide ``batch`` (one run's results) and settle each delivery's future, never raising.

        If deciding them together fails, each is decided alone, so one result that cannot be recorded
        does not hold back the others.
        """
        if len(batch) > 1:
            try:
                results = await self._decide_together(batch)
            except Exception:
                log.warning(
                    "deciding %d results of run %s together failed; deciding each alone",
                    len(batch),
                    batch[0].job.instance_id,
                    exc_info=True,
                )
            else:
                for delivery, result in zip(batch, results, strict=True):
                    if not delivery.done.done():
                        delivery.done.set_result(result)
                return
        for delivery in batch:
            try:
                result = await self._decide_alone(delivery)
            except Exception as exc:  # noqa: BLE001 -- handed to the worker waiting for this result
                if not delivery.done.done():
                    delivery.done.set_exception(exc)
            else:
                if not delivery.done.done():
                    delivery.done.set_result(result)

    async def _decide_alone(self, delivery: _Delivery) -> Job | None:
        job, outcome = delivery.job, delivery.outcome
        plan = await self.plans.get(job.instance_id)

        async def decide(tx: StateTransaction, status: RunStatus, effects: _Effects) -> Job | None:
            return await self._decide_delivery(tx, plan, delivery, status, effects)

        async with self._serialized(job.instance_id):
            if delivery.claim_for is not None and isinstance(outcome, Completed):
                taken, follow = await self._try_chain_step(plan, job, outcome, delivery.claim_for)
                if taken:
                    return follow
            if delivery.claim_for is not None and isinstance(outcome, Completed):
                taken, follow = await self._try_iteration_step(plan, job, outcome, delivery.claim_for)
                if taken:
                    return follow
            if isinstance(outcome, Completed) and await self._try_end_step(plan, job, outcome):
                return None
            return await self._decide_with_cas(job.instance_id, decide)

    async def _decide_together(self, batch: list[_Delivery]) -> list[Job | None]:
        instance_id = batch[0].job.instance_id
        plan = await self.plans.get(instance_id)

        async def decide(tx: StateTransaction, status: RunStatus, effects: _Effects) -> list[Job | None]:
            results: list[Job | None] = []
            for delivery in batch:
                own = _Effects(tx.now)  # each decides as it would alone (its own "did I start anything")
                try:
                    results.append(await self._decide_delivery(tx, plan, delivery, status, own))
                except _DuplicateDeliveryError:  # raised before it wrote anything: skip just this one
                    results.append(None)
                    continue
                effects.absorb(own)
                status = own.run_status or status
            return results

        async with self._serialized(instance_id):
            return await self._decide_with_cas(instance_id, decide) or [None] * len(batch)

    async def _decide_delivery(
        self, tx: StateTransaction, plan: RunPlan, delivery: _Delivery, status: RunStatus, effects: _Effects
    ) -> Job | None:
        job, outcome, claim_for = delivery.job, delivery.outcome, delivery.claim_for
        if isinstance(outcome, Completed):
            follow = await self._record_completion(tx, plan, job, outcome, status, claim_for, effects)
        else:
            follow = await self._record_failure(tx, plan, job, outcome, status, claim_for, effects)
        if follow is None and claim_for is not None and delivery.claim_any:
            follow = await self._claim_due(tx, claim_for, effects)
        return follow

    async def _try_chain_step(self, plan: RunPlan, job: Job, outcome: Completed, owner: str) -> tuple[bool, Job | None]:
        """Take a chain's step (one successor, nothing else decided) in one statement where the database
        allows it (PostgreSQL): the same rows as the general decision, in one round trip instead of five.

        Returns (taken, the successor's job): not taken when this is not one, or nothing was written
        (the general path then decides, reading the instance version afresh).
        """
        known = self._versions.get(job.instance_id)
        if known is None or outcome.iterations is not None or outcome.queue_delay:
            return False, None
        graph = plan.graph
        successor = sole_successor(graph, job.node_id, outcome.handle) if outcome.handle else None
        if successor is None or successor in plan.pinned:
            return False, None
        payload = _completed_payload(outcome)
        step = await self.state.chain_step(
            ChainStepInput(job, known, graph.node(job.node_id).variable, payload, successor, owner, self.lease_seconds)
        )
        if step is None:
            return False, None  # the store takes no chain steps in one statement
        if step.status is None:
            self._versions.forget(job.instance_id)
            return False, None
        self._versions.remember(job.instance_id, known + 1)
        if not step.logged:
            return True, None  # a duplicate delivered concurrently: recorded by the other, nothing to do
        self._announce_step(step, job, outcome)
        if step.next_job is None and step.job_removed and step.status is RunStatus.RUNNING:
            # The successor had been dispatched before (its guard row exists): what is left of the
            # general decision is to see whether that finished the scope or the run.
            loop_id = graph.loop_of(job.node_id)

            async def settle(tx: StateTransaction, status: RunStatus, effects: _Effects) -> None:
                if status is RunStatus.RUNNING:
                    await self._settle(tx, plan, job.iteration, loop_id, effects)

            await self._decide_with_cas(job.instance_id, settle)
        return True, step.next_job

    async def _try_iteration_step(
        self, plan: RunPlan, job: Job, outcome: Completed, owner: str
    ) -> tuple[bool, Job | None]:
        """Decide the node that ends a loop iteration in one statement where the database allows it
        (PostgreSQL): one more finished iteration and the next item started, as the general decision
        writes them. Not taken (nothing written) when this is not one or the loop finishes with it."""
        known = self._versions.get(job.instance_id)
        graph = plan.graph
        loop_id = graph.loop_of(job.node_id)
        if known is None or loop_id is None or not job.iteration:
            return False, None
        if outcome.iterations is not None or outcome.queue_delay or graph.edges_from(job.node_id):
            return False, None
        entry = loop_entry(graph, loop_id)
        if entry is None or entry in plan.pinned:
            return False, None
        payload = _completed_payload(outcome)
        step = await self.state.iteration_step(
            IterationStepInput(
                job,
                known,
                graph.node(job.node_id).variable,
                payload,
                loop_id,
                tuple(graph.bodies[loop_id]),
                entry,
                loop_concurrency(graph.node(loop_id).config),
                owner,
                self.lease_seconds,
            )
        )
        if step is None:
            return False, None  # the store takes no iteration steps in one statement
        if step.status is None:
            self._versions.forget(job.instance_id)
            return False, None
        self._versions.remember(job.instance_id, known + 1)
        self._announce_step(step, job, outcome)
        return True, step.next_job

    def _announce_step(self, step: ChainStep, job: Job, outcome: Completed) -> None:
        """What a one-statement step wrote: the node completed, and the next job dispatched and started."""
        effects = _Effects(step.now)
        if step.logged:
            effects.node(_key(job), NodeStatus.COMPLETED, job.attempt, output=outcome.output)
        if step.next_job is not None:
            effects.jobs_added += 1
            effects.node(_key(step.next_job), NodeStatus.DISPATCHED, step.next_job.attempt)
            effects.node(_key(step.next_job), NodeStatus.RUNNING, step.next_job.attempt)
        self._announce(effects)

    async def _try_end_step(self, plan: RunPlan, job: Job, outcome: Completed) -> bool:
        """Decide a top-level end node's result in one statement where the database allows it
        (PostgreSQL): the same rows as the general decision. ``False``: not one, or nothing was written."""
        known = self._versions.get(job.instance_id)
        if known is None or job.iteration:
            return False
        node = plan.graph.node(job.node_id)
        if node.type != "end" or outcome.iterations is not None or plan.graph.edges_from(job.node_id):
            return False
        payload = _completed_payload(outcome, end=True)
        step = await self.state.end_step(EndStepInput(job, known, node.variable, payload, outcome.output))
        if step is None:
            return False  # the store takes no end steps in one statement
        if step.status is None:
            self._versions.forget(job.instance_id)
            return False
        self._versions.remember(job.instance_id, known + 1)
        effects = _Effects(step.now)
        if step.logged:
            effects.node(_key(job), NodeStatus.COMPLETED, job.attempt, output=outcome.output)
        if step.run_completed:
            effects.run(job.instance_id, RunStatus.COMPLETED, output=step.output)
        self._announce(effects)
        return True

    async def _record_completion(
        self,
        tx: StateTransaction,
        plan: RunPlan,
        job: Job,
        outcome: Completed,
        status: RunStatus,
        claim_for: str | None,
        effects: _Effects,
    ) -> Job | None:
        node = plan.graph.node(job.node_id)
        if outcome.iterations is not None and plan.graph.is_loop(node.id):
            return await self._start_loop(tx, plan, job, outcome.iterations, status, claim_for, effects)
        payload = _completed_payload(outcome, end=node.type == "end")
        event = LogEvent(
            job.instance_id,
            EventType.NODE_COMPLETED,
            node_id=job.node_id,
            iteration=job.iteration,
            node_status=NodeStatus.COMPLETED.value,
            output_variable=node.variable,
            payload=payload,
            node_attempt=job.attempt,
        )
        logged, job_removed = await tx.record_result(event, job.id, job.attempt)
        if not logged:
            raise _DuplicateDeliveryError
        effects.node(_key(job), NodeStatus.COMPLETED, job.attempt, output=outcome.output)
        if not job_removed or status is not RunStatus.RUNNING:
            return None  # a late result (run failed/cancelled, or a newer attempt exists): recorded, starts nothing
        claimed = await self._advance(
            tx, plan, job.iteration, [(job.node_id, outcome.handle)], outcome.queue_delay, claim_for, effects
        )
        loop_id = plan.graph.loop_of(job.node_id)
        settled = await self._settle(
            tx, plan, job.iteration, loop_id, effects, claim_for=None if claimed else claim_for
        )
        return claimed or settled

    async def _record_failure(
        self,
        tx: StateTransaction,
        plan: RunPlan,
        job: Job,
        outcome: Failed,
        status: RunStatus,
        claim_for: str | None,
        effects: _Effects,
    ) -> Job | None:
        graph, node_id = plan.graph, job.node_id
        policy = graph.retry_policy(node_id)
        used = job.attempt - job.retry_base + 1
        will_retry = outcome.retryable and used < policy.max_attempts and status is RunStatus.RUNNING
        delay = backoff_seconds(policy, used) if will_retry else 0.0
        error = {"type": outcome.error_type, "message": outcome.message}
        payload: dict[str, Any] = {"error": error, "retry": will_retry}
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
            raise _DuplicateDeliveryError
        if will_retry:
            if await tx.jobs.reschedule(job.id, job.attempt, delay):
                effects.node(
                    _key(job), NodeStatus.RETRYING, job.attempt, error=outcome.message, next_attempt_at=tx.now + delay
                )
                effects.wake_at.append(tx.now + delay)
            return None
        if not await tx.jobs.delete(job.id, job.attempt) or status is not RunStatus.RUNNING:
            effects.node(_key(job), NodeStatus.FAILED, job.attempt, error=outcome.message)
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
            effects.node(_key(job), NodeStatus.COMPLETED, job.attempt, output={"error": error})
            claimed = await self._advance(tx, plan, job.iteration, [(node_id, "error")], None, claim_for, effects)
            await self._settle(tx, plan, job.iteration, graph.loop_of(node_id), effects)
            return claimed
        effects.node(_key(job), NodeStatus.FAILED, job.attempt, error=outcome.message)
        attempts = f"{used} attempt{'s' if used != 1 else ''}"
        await self._fail(tx, plan.instance_id, f"node '{node_id}' failed after {attempts}: {outcome.message}", effects)
        return None

    async def _claim_due(self, tx: StateTransaction, owner: str, effects: _Effects) -> Job | None:
        jobs = await tx.claim_and_start(owner, 1, self.lease_seconds)
        if not jobs:
            return None
        effects.node(_key(jobs[0]), NodeStatus.RUNNING, jobs[0].attempt)
        return jobs[0]

    # -- run-level requests ------------------------------------------------------------------------
    async def cancel_run(self, instance_id: str, reason: str = "cancelled by request") -> bool:
        """Cancel a run that has not finished; ``False`` if it already had."""

        async def decide(tx: StateTransaction, status: RunStatus, effects: _Effects) -> bool:
            if status in TERMINAL_RUN_STATUSES:
                return False
            await tx.jobs.delete_for_instance(instance_id)
            await tx.set_run_status(instance_id, RunStatus.CANCELLED, reason=reason)
            effects.run(instance_id, RunStatus.CANCELLED)
            effects.stopped_runs.append(instance_id)
            return True

        return bool(await self._decide(instance_id, decide))

    async def fail_run(self, instance_id: str, reason: str) -> bool:
        """Fail a RUNNING run from outside (run timeout, recovery); ``False`` if it was not running."""

        async def decide(tx: StateTransaction, status: RunStatus, effects: _Effects) -> bool:
            if status is not RunStatus.RUNNING:
                return False
            await self._fail(tx, instance_id, reason, effects)
            return True

        return bool(await self._decide(instance_id, decide))

    async def retry_run(self, instance_id: str) -> list[str]:
        """Partial retry of a FAILED run: failed and interrupted nodes run again, completed outputs stay.

        Returns the ids of the nodes started again.
        """
        plan = await self.plans.get(instance_id)

        async def decide(tx: StateTransaction, status: RunStatus, effects: _Effects) -> list[str]:
            if status is not RunStatus.FAILED:
                raise RunStateError(f"only a FAILED run can be retried; run {instance_id} is {status.value}")
            graph = plan.graph
            retry = plan_retry(graph, await tx.node_rows(instance_id), await tx.loop_states(instance_id))
            await tx.replace_barriers(instance_id, retry.barriers)
            for (loop_id, scope), finished in retry.loop_finished.items():
                await tx.set_loop_finished(instance_id, loop_id, scope, finished)
            for scope, node_id in retry.skip:
                await self._skip(tx, instance_id, scope, [node_id], effects)
            deadline = tx.now + graph.definition.options.timeout_seconds
            await tx.set_run_status(instance_id, RunStatus.RUNNING, reason="partial retry", deadline_at=deadline)
            effects.run(instance_id, RunStatus.RUNNING)
            for scope, node_id, attempt in retry.dispatch:
                await self._dispatch(tx, plan, scope, [_Dispatch(node_id, attempt)], None, None, effects)
            for loop_id, scope, index in retry.start_iterations:
                await self._advance(tx, plan, child_scope(scope, index), [(loop_id, "loop")], None, None, effects)
            for loop_id, scope in retry.complete_loops:
                count, _, attempt = (await tx.loop_states(instance_id))[(loop_id, scope)]
                await self._complete_loop(tx, plan, loop_id, scope, count, attempt, effects)
                await self._settle(tx, plan, scope, graph.loop_of(loop_id), effects)
            await self._settle(tx, plan, "", None, effects)
            return [node_id for _, node_id, _ in retry.dispatch]

        result = await self._decide(instance_id, decide)
        return result or []

    # -- the decision machinery --------------------------------------------------------------------
    async def _decide(
        self, instance_id: str, decision: Callable[[StateTransaction, RunStatus, _Effects], Awaitable[T]]
    ) -> T | None:
        # Decisions of one run are serialised by the CAS anyway. Queueing this process's own ones on
        # a lock first means they don't lose the CAS to each other (on PostgreSQL a loser has already
        # waited for the winner's commit); the CAS still decides between processes.
        async with self._serialized(instance_id):
            return await self._decide_with_cas(instance_id, decision)

    @asynccontextmanager
    async def _serialized(self, instance_id: str) -> AsyncIterator[None]:
        """Hold this process's lock of the run (see ``_decide``)."""
        lock = self._run_locks.get(instance_id)
        if lock is None:
            lock = self._run_locks[instance_id] = _RunLock()
        lock.users += 1
        try:
            async with lock.lock:
                yield
        finally:
            lock.users -= 1
            if not lock.users:
                del self._run_locks[instance_id]

    async def _decide_with_cas(
        self, instance_id: str, decision: Callable[[StateTransaction, RunStatus, _Effects], Awaitable[T]]
    ) -> T | None:
        for attempt in range(_MAX_CAS_ATTEMPTS):
            known = self._versions.get(instance_id)
            try:
                async with self.state.transaction() as tx:
                    effects = _Effects(tx.now)
                    version, status = await self._claim_version(tx, instance_id, known)
                    result = await decision(tx, status, effects)
            except _DuplicateDeliveryError:
                return None
            except _CasConflictError:
                self._versions.forget(instance_id)
                await asyncio.sleep(random.uniform(0, 0.001 * min(attempt + 1, 20)))  # noqa: S311 -- jitter
                continue
            except BaseException:
                self._versions.forget(instance_id)
                raise
            self._versions.remember(instance_id, version + 1)
            self._announce(effects)
            return result
        raise RuntimeError(f"run {instance_id}: no decision after {_MAX_CAS_ATTEMPTS} compare-and-swap attempts")

    @staticmethod
    async def _claim_version(tx: StateTransaction, instance_id: str, known: int | None) -> tuple[int, RunStatus]:
        """The compare-and-swap: move the instance from its version to the next; returns (old version, status).

        The version this process committed last is usually still current (a run's decisions mostly
        happen here), which saves reading it first; when another process moved it on, read it and
        try once more.
        """
        if known is not None:
            status = await tx.compare_and_swap(instance_id, known)
            if status is not None:
                return known, status
        current = await tx.read_instance_version(instance_id)
        if current is None:
            raise RunNotFoundError(f"run {instance_id} does not exist")
        _, version = current
        status = await tx.compare_and_swap(instance_id, version)
        if status is None:
            raise _CasConflictError
        return version, status

    async def _advance(
        self,
        tx: StateTransaction,
        plan: RunPlan,
        iteration: str,
        finished: list[tuple[str, str | None]],
        delay: float | None,
        claim_for: str | None,
        effects: _Effects,
    ) -> Job | None:
        """Resolve the outgoing edges of finished nodes; skip and dispatch what that decides."""
        graph = plan.graph
        to_run: list[_Dispatch] = []
        frontier = finished
        while frontier:
            immediate: dict[str, EdgeCounts] = {}
            barrier: dict[str, EdgeCounts] = {}
            for node_id, handle in frontier:
                for target, (resolved, taken) in edge_deltas(graph, node_id, handle).items():
                    bucket = immediate if graph.has_single_source(target) else barrier
                    r, t = bucket.get(target, (0, 0))
                    bucket[target] = (r + resolved, t + taken)
            counts = {**immediate, **await tx.bump_barriers(plan.instance_id, iteration, barrier)}
            skipped: list[str] = []
            for target, after in counts.items():
                newly_taken = (immediate.get(target) or barrier[target])[1]
                verdict = node_verdict(graph, target, after, newly_taken)
                if verdict is Verdict.RUN:
                    to_run.append(_Dispatch(target))
                elif verdict is Verdict.SKIP:
                    skipped.append(target)
                elif after[0] < len(graph.edges_into(target)):
                    effects.awaiting_edges = True
            await self._skip(tx, plan.instance_id, iteration, skipped, effects)
            frontier = [(node_id, None) for node_id in skipped]
        return await self._dispatch(tx, plan, iteration, to_run, delay, claim_for, effects)

    async def _skip(
        self, tx: StateTransaction, instance_id: str, iteration: str, node_ids: Sequence[str], effects: _Effects
    ) -> None:
        if not node_ids:
            return
        await tx.log_event_bulk(
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
            effects.node((instance_id, node_id, iteration), NodeStatus.SKIPPED, 0)

    async def _dispatch(
        self,
        tx: StateTransaction,
        plan: RunPlan,
        iteration: str,
        dispatches: Sequence[_Dispatch],
        delay: float | None,
        claim_for: str | None,
        effects: _Effects,
    ) -> Job | None:
        """Log NODE_DISPATCHED and queue a job for each node; pinned nodes complete at once instead."""
        if not dispatches:
            return None
        instance_id = plan.instance_id
        if len(dispatches) == 1 and dispatches[0].node_id not in plan.pinned:  # a chain's step: the common case
            return await self._dispatch_one(tx, plan, iteration, dispatches[0], delay, claim_for, effects)
        inserted = set(
            await tx.log_event_bulk(
                [
                    LogEvent(
                        instance_id,
                        EventType.NODE_DISPATCHED,
                        node_id=d.node_id,
                        iteration=iteration,
                        node_status=NodeStatus.DISPATCHED.value,
                        payload=None if d.node_id in plan.pinned else _due_payload(tx, delay),
                        node_attempt=d.attempt,
                    )
                    for d in dispatches
                ]
            )
        )
        fresh = [d for d in dispatches if d.node_id in inserted]  # the dispatch guard: never the same node twice
        pinned = [d for d in fresh if d.node_id in plan.pinned]
        queued = [d for d in fresh if d.node_id not in plan.pinned]
        claim = claim_for if claim_for and not delay and queued else None
        jobs = await tx.jobs.add(
            [
                NewJob(
                    instance_id,
                    d.node_id,
                    iteration,
                    d.attempt,
                    d.attempt,
                    delay or 0.0,
                    lease_owner=claim if i == 0 else None,
                    lease_seconds=self.lease_seconds,
                )
                for i, d in enumerate(queued)
            ]
        )
        effects.jobs_added += len(jobs)
        claimed: Job | None = None
        for job in jobs:
            effects.node(_key(job), NodeStatus.DISPATCHED, job.attempt, next_attempt_at=_due(tx, delay))
            if claim and job.node_id == queued[0].node_id:
                claimed = job
        if claimed is not None:
            await tx.log_event(started_event(claimed))
            effects.node(_key(claimed), NodeStatus.RUNNING, claimed.attempt)
        if len(jobs) > (claimed is not None):
            effects.wake_at.append(tx.now + (delay or 0.0))
        for d in pinned:
            follow = await self._complete_pinned(tx, plan, iteration, d, effects)
            claimed = claimed or follow
        return claimed

    async def _dispatch_one(
        self,
        tx: StateTransaction,
        plan: RunPlan,
        iteration: str,
        dispatch: _Dispatch,
        delay: float | None,
        claim_for: str | None,
        effects: _Effects,
    ) -> Job | None:
        claim = claim_for if not delay else None
        job = await tx.dispatch_one(
            NewJob(
                plan.instance_id,
                dispatch.node_id,
                iteration,
                dispatch.attempt,
                dispatch.attempt,
                delay or 0.0,
                lease_owner=claim,
                lease_seconds=self.lease_seconds,
            )
        )
        if job is None:
            return None
        effects.jobs_added += 1
        effects.node(_key(job), NodeStatus.DISPATCHED, job.attempt, next_attempt_at=_due(tx, delay))
        if claim:
            effects.node(_key(job), NodeStatus.RUNNING, job.attempt)
            return job
        effects.wake_at.append(tx.now + (delay or 0.0))
        return None

    async def _complete_pinned(
        self, tx: StateTransaction, plan: RunPlan, iteration: str, dispatch: _Dispatch, effects: _Effects
    ) -> Job | None:
        """A pinned node (test runs only) completes at once with its pinned output, logged as such."""
        graph, node_id = plan.graph, dispatch.node_id
        node = graph.node(node_id)
        output = plan.pinned[node_id]
        handle = _pinned_handle(graph, node_id, output)
        payload: dict[str, Any] = {"output": output, "handle": handle, "pinned": True}
        if node.type == "end":
            payload["end"] = True
        await tx.log_event(
            LogEvent(
                plan.instance_id,
                EventType.NODE_COMPLETED,
                node_id=node_id,
                iteration=iteration,
                node_status=NodeStatus.COMPLETED.value,
                output_variable=node.variable,
                payload=payload,
                node_attempt=dispatch.attempt,
            )
        )
        effects.node(
            (plan.instance_id, node_id, iteration), NodeStatus.COMPLETED, dispatch.attempt, output=output, pinned=True
        )
        return await self._advance(tx, plan, iteration, [(node_id, handle)], None, None, effects)

    # -- loops -------------------------------------------------------------------------------------
    async def _start_loop(
        self,
        tx: StateTransaction,
        plan: RunPlan,
        job: Job,
        items: list[Any],
        status: RunStatus,
        claim_for: str | None,
        effects: _Effects,
    ) -> Job | None:
        """Expand a loop: one scope per item with its ``ctx.loop`` row, the first iterations started."""
        if not await tx.jobs.delete(job.id, job.attempt) or status is not RunStatus.RUNNING:
            return None
        graph, loop_id, scope = plan.graph, job.node_id, job.iteration
        count = len(items)
        started = min(loop_concurrency(graph.node(loop_id).config), count)
        if not await tx.start_loop(plan.instance_id, loop_id, scope, count, job.attempt):
            raise _DuplicateDeliveryError
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
            got = await self._advance(
                tx, plan, child_scope(scope, index), [(loop_id, "loop")], None, None if claimed else claim_for, effects
            )
            claimed = claimed or got
        if count == 0 or not graph.bodies[loop_id]:
            await self._settle(tx, plan, child_scope(scope, 0), loop_id, effects, loop_is_empty=count == 0)
        else:
            for index in range(started):  # a body made only of pinned nodes finishes without a job
                if not effects.jobs_added:
                    await self._settle(tx, plan, child_scope(scope, index), loop_id, effects)
        return claimed

    async def _settle(
        self,
        tx: StateTransaction,
        plan: RunPlan,
        scope: str,
        loop_id: str | None,
        effects: _Effects,
        *,
        claim_for: str | None = None,
        loop_is_empty: bool = False,
    ) -> Job | None:
        """After a decision in ``scope``: finish what has no work left — iterations, loops, the run.

        Returns the job of a next iteration leased to ``claim_for``, if it started one.
        """
        graph, instance_id = plan.graph, plan.instance_id
        while not effects.jobs_added:
            if loop_id is None:
                await self._finish_if_done(tx, plan, effects)
                return None
            parent = parent_scope(scope)
            if loop_is_empty:
                count, attempt = 0, await tx.loop_attempt(instance_id, loop_id, parent)
            else:
                if await tx.has_scope_jobs(instance_id, graph.bodies[loop_id], scope):
                    return None
                count, finished, attempt = await tx.finish_iteration(instance_id, loop_id, parent)
                next_index = finished + loop_concurrency(graph.node(loop_id).config) - 1
                if next_index < count:
                    scope = child_scope(parent, next_index)
                    claimed = await self._advance(tx, plan, scope, [(loop_id, "loop")], None, claim_for, effects)
                    if claimed is not None:
                        return claimed
                    continue
                if finished < count:
                    return None
            await self._complete_loop(tx, plan, loop_id, parent, count, attempt, effects)
            scope, loop_id, loop_is_empty = parent, graph.loop_of(loop_id), False
        return None

    async def _complete_loop(
        self, tx: StateTransaction, plan: RunPlan, loop_id: str, scope: str, count: int, attempt: int, effects: _Effects
    ) -> None:
        """Every iteration is done: the loop completes on ``done`` with the iterations' results in item order."""
        graph = plan.graph
        sinks = graph.body_sinks(loop_id)
        by_index: dict[int, dict[str, Any]] = {}
        for node_id, iteration, output in await tx.completed_outputs(plan.instance_id, sinks) if sinks else []:
            if parent_scope(iteration) == scope:
                by_index.setdefault(int(iteration.rsplit(".", 1)[-1]), {})[node_id] = output
        results = [
            (by_index.get(i, {}).get(sinks[0]) if len(sinks) == 1 else by_index.get(i, {})) if sinks else None
            for i in range(count)
        ]
        output = {"items": results, "count": count}
        node = graph.node(loop_id)
        await tx.log_event(
            LogEvent(
                plan.instance_id,
                EventType.NODE_COMPLETED,
                node_id=loop_id,
                iteration=scope,
                node_status=NodeStatus.COMPLETED.value,
                output_variable=node.variable,
                payload={"output": output, "handle": "done"},
                node_attempt=attempt,
            )
        )
        effects.node((plan.instance_id, loop_id, scope), NodeStatus.COMPLETED, attempt, output=output)
        await self._advance(tx, plan, scope, [(loop_id, "done")], None, None, effects)

    async def _finish_if_done(self, tx: StateTransaction, plan: RunPlan, effects: _Effects) -> None:
        """Nothing queued, leased or waiting any more: every node is terminal, so the run is COMPLETED."""
        if effects.jobs_added or effects.awaiting_edges:
            return
        output = await tx.outputs_if_idle(plan.instance_id)
        if output is None:
            return
        await tx.set_run_status(plan.instance_id, RunStatus.COMPLETED, output=output)
        effects.run(plan.instance_id, RunStatus.COMPLETED, output=output)

    async def _fail(self, tx: StateTransaction, instance_id: str, message: str, effects: _Effects) -> None:
        """Fail fast: drop every queued job so nothing new starts; in-flight results are still recorded."""
        await tx.jobs.delete_for_instance(instance_id)
        await tx.set_run_status(instance_id, RunStatus.FAILED, error=message, reason=message)
        effects.run(instance_id, RunStatus.FAILED, error=message)

    def _announce(self, effects: _Effects) -> None:
        self.publisher.publish(effects.updates)
        if effects.wake_at:
            due = min(effects.wake_at)
            for listener in self.job_listeners:
                listener(due)
        for instance_id in effects.stopped_runs:
            for stop in self.stop_listeners:
                stop(instance_id)


class _KnownVersions:
    """The instance versions this process committed last, for the most recent runs (bounded)."""

    _LIMIT = 10_000

    def __init__(self) -> None:
        self._versions: OrderedDict[str, int] = OrderedDict()

    def get(self, instance_id: str) -> int | None:
        return self._versions.get(instance_id)

    def remember(self, instance_id: str, version: int) -> None:
        self._versions[instance_id] = version
        self._versions.move_to_end(instance_id)
        if len(self._versions) > self._LIMIT:
            self._versions.popitem(last=False)

    def forget(self, instance_id: str) -> None:
        self._versions.pop(instance_id, None)


def _due(tx: StateTransaction, delay: float | None) -> float | None:
    """When a delayed dispatch falls due (a delay node's successors): shown while it waits."""
    return tx.now + delay if delay else None


def _completed_payload(outcome: Completed, *, end: bool = False) -> dict[str, Any]:
    """The NODE_COMPLETED row's payload: the output, the handle taken, the end mark and the logs."""
    payload: dict[str, Any] = {"output": outcome.output, "handle": outcome.handle}
    if end:
        payload["end"] = True
    if outcome.logs:
        payload["logs"] = outcome.logs
    return payload


def _due_payload(tx: StateTransaction, delay: float | None) -> dict[str, float] | None:
    """A delayed NODE_DISPATCHED row says when the node falls due (the run's views show the wait)."""
    return {"dueAt": tx.now + delay} if delay else None


def _key(job: Job) -> tuple[str, str, str]:
    return job.instance_id, job.node_id, job.iteration


def _run_status_event(instance_id: str, status: RunStatus) -> LogEvent:
    return LogEvent(instance_id, EventType.RUN_STATUS, node_status=status.value, payload={"status": status.value})


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
