"""The orchestrator: the engine's entry points for scheduling decisions, one atomic transaction each (seed 001).

A decision reads the instance version, claims the next one with a compare-and-swap and only then
writes: the node's result row (the unique index turns a duplicate delivery into a no-op), the
NODE_SKIPPED / NODE_DISPATCHED rows and the jobs of the nodes it starts. Everything commits
together, so a crash can never leave a node dispatched but not queued, or completed with nothing
started after it. A decision that loses the CAS rolls back and runs again on fresh state.

Where the rules live (docs/engine.md): engine/decision.py (the portable rules), engine/cas.py (the
compare-and-swap and its retry loop), engine/batching.py (results of one run decided together),
engine/effects.py (what is announced after the commit), engine/one_statement.py (the common
decisions offered to the store as one statement each).
"""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Mapping
from typing import Any, Protocol

from flowdeck.domain.graph import Graph
from flowdeck.domain.statuses import TERMINAL_RUN_STATUSES, NodeStatus, RunStatus
from flowdeck.engine.batching import Batcher, Delivery
from flowdeck.engine.calls import record_call
from flowdeck.engine.cas import Cas, DuplicateDeliveryError
from flowdeck.engine.decision import Decision, end_run, fail_run
from flowdeck.engine.effects import Announcer, Effects, job_key
from flowdeck.engine.flow_control import FlowRequest
from flowdeck.engine.one_statement import OneStatementSteps
from flowdeck.engine.outcomes import Called, Completed, Failed, NodeOutcome, Parked, RunStateError
from flowdeck.engine.partial_retry import apply_retry, retry_flow
from flowdeck.engine.plans import PlanCache, RunNotFoundError, RunPlan
from flowdeck.engine.publisher import Publisher
from flowdeck.engine.recheck import Recheck
from flowdeck.engine.run_limits import ActiveRunsGate, RunLimits
from flowdeck.engine.run_start import open_run
from flowdeck.engine.run_timing import RunTiming
from flowdeck.engine.sla import arm_sla
from flowdeck.engine.waits import has_waits, park_wait
from flowdeck.storage.children import ParentRef
from flowdeck.storage.log_rows import input_event
from flowdeck.storage.records import Job
from flowdeck.storage.run_queries import RunQueries, RunView
from flowdeck.storage.state import StateManager, StateTransaction, run_context
from flowdeck.storage.steps import RunStart

__all__ = ("Completed", "Failed", "NodeOutcome", "Orchestrator", "RunStateError", "StartTaker")


class StartTaker(Protocol):
    """An in-process worker that runs the start node of a run started here: leased to it in the run's first
    transaction, it needs no claim (engine/worker.py)."""

    id: str

    def reserve_start(self, tenant_id: str) -> int | None:
        """A slot held for a start node (a reservation), or ``None`` when there is none to spare."""

    def take_start(self, reservation: int, job: Job | None) -> None:
        """Run the start node leased in the committed transaction; ``None``: none was (the slot is free again)."""

    def know_start_context(self, instance_id: str, graph: Graph, context: dict[str, Any]) -> None:
        """The context of a run's start node, from its committed first transaction: whoever here runs it reads
        nothing (engine/executor.py)."""


class Orchestrator:
    def __init__(
        self,
        state: StateManager,
        plans: PlanCache,
        publisher: Publisher,
        *,
        lease_seconds: float = 30.0,
        limits: RunLimits | None = None,
        active_runs: ActiveRunsGate | None = None,
    ) -> None:
        self.state = state
        self.plans = plans
        self.publisher = publisher
        self.lease_seconds = lease_seconds
        self.limits = limits or RunLimits()
        self.active_runs = active_runs
        """Whether a tenant may start one more run (a child counts as one); ``None``: no budget."""
        self._announce = Announcer(publisher)
        self.announce = self._announce
        """Publishes committed effects and wakes workers (flow control's admissions use it too)."""
        self.job_listeners = self._announce.job_listeners
        """Called with the due time of newly queued jobs (in-process wake-ups)."""
        self.stop_listeners = self._announce.stop_listeners
        """Called with the id of a cancelled or deleted run (stop its in-flight nodes)."""
        self.end_listeners = self._announce.end_listeners
        """Called with the id and status of a run that failed or was cancelled (engine/calls.py)."""
        self.start_taker: StartTaker | None = None
        """The in-process worker that takes the start nodes of the runs started here, while it has room."""
        self._cas = Cas(state, self._announce)
        self._cas.recheck = Recheck(self._run_view, state.db.flush_wal, self._announce)
        self._steps = OneStatementSteps(self._cas, lease_seconds, self.limits.max_run_bytes)
        self._batches = Batcher(self._decide_alone, self._decide_together)

    async def _run_view(self, instance_id: str) -> RunView | None:
        """The run as the database shows it now (``None``: it is gone)."""
        try:
            plan = await self.plans.get(instance_id)
        except RunNotFoundError:
            return None
        return await RunQueries(self.state.db, self.state).run_view(plan.tenant_id, instance_id)

    def forget_versions(self) -> None:
        """Forget the instance versions this process knows (its last decisions may have been lost)."""
        self._cas.versions.clear()

    def _decision(self, tx: StateTransaction, plan: RunPlan, effects: Effects, owner: str | None = None) -> Decision:
        return Decision(
            tx, plan, effects, owner=owner, lease_seconds=self.lease_seconds, max_run_bytes=self.limits.max_run_bytes
        )

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
        timing: RunTiming | None = None,
        labels: Mapping[str, str] | None = None,
        requested_by: str | None = None,
        flow: FlowRequest | None = None,
        check_latest: bool = False,
    ) -> str:
        """Create a run and queue its start node, in one transaction. Test runs pass ``test_definition``.
        ``labels`` (checked by the caller) are written in that transaction; ``flow``: the run's flow control
        (engine/flow_control.py), which may queue or cancel it in that transaction.

        With ``timing.available_at`` the run is PENDING and its start node's job due then; the start
        node's decision begins it (``_decide_delivery``).

        ``check_latest``: ``workflow_version`` was not read just now; only a start in one statement
        (``starts_in_one_statement``) may be asked to check it, and raises ``LatestVersionChangedError`` when it
        is no longer the workflow's latest.
        """
        is_test = test_definition is not None
        instance_id = instance_id or str(uuid.uuid4())
        plan = RunPlan(instance_id, tenant_id, workflow_id, is_test, graph, dict(pinned or {}) if is_test else {})
        if flow is not None:  # its run_flow row holds the priority a reloaded plan reads
            plan = dataclasses.replace(plan, priority=flow.priority)
        timeout = graph.definition.options.timeout_seconds
        timing = timing or RunTiming()
        one_statement = self.starts_in_one_statement(graph, is_test=is_test, timing=timing, labels=labels, flow=flow)
        if check_latest and not one_statement:
            raise ValueError("only a start in one statement checks the workflow's latest version")
        taker = self.start_taker
        reservation = taker.reserve_start(tenant_id) if taker is not None else None
        owner = taker.id if taker is not None and reservation is not None else None
        started: Job | None = None
        try:
            if one_statement:
                start = RunStart(
                    instance_id,
                    tenant_id,
                    workflow_id,
                    workflow_version,
                    trigger,
                    run_input,
                    timeout,
                    graph.start_id,
                    timing.deadline_at,
                    requested_by,
                    owner=owner,
                    lease_seconds=self.lease_seconds,
                    check_latest=check_latest,
                )
                done = await self.state.start_production_run(start)
                if done is not None:
                    now, started = done
                    effects = Effects(now)
                    effects.run(instance_id, RunStatus.RUNNING)
                    effects.node((instance_id, graph.start_id, ""), NodeStatus.DISPATCHED, 1)
                    if started is not None:
                        effects.node(job_key(started), NodeStatus.RUNNING, started.attempt)
                    else:
                        effects.wake_at.append(now)
                    if taker is not None:  # the statement logs the run's input and its status
                        taker.know_start_context(instance_id, graph, run_context([input_event(instance_id, run_input)]))
                    return await self._opened(plan, effects, pending=False)
            async with self.state.transaction() as tx:
                effects = Effects(tx.now)
                opened = await open_run(
                    self._decision(tx, plan, effects, owner=owner),
                    run_input=run_input,
                    workflow_version=workflow_version,
                    test_definition=test_definition,
                    trigger=trigger,
                    timing=timing,
                    labels=labels,
                    requested_by=requested_by,
                    flow=flow,
                    claim=owner is not None,
                )
            started = opened.started
            if taker is not None and not opened.pending:
                taker.know_start_context(instance_id, graph, opened.start_context())
            return await self._opened(plan, effects, pending=opened.pending)
        finally:
            if taker is not None and reservation is not None:  # after the announcement: its updates go first
                taker.take_start(reservation, started)

    def starts_in_one_statement(
        self,
        graph: Graph,
        *,
        is_test: bool = False,
        timing: RunTiming | None = None,
        labels: Mapping[str, str] | None = None,
        flow: FlowRequest | None = None,
    ) -> bool:
        """Whether ``start_run`` creates this run in one statement (PostgreSQL, a plain production run)."""
        plain = not is_test and (timing is None or timing.available_at is None) and not labels and flow is None
        return plain and self.state.starts_in_one_statement and not has_waits(graph)

    async def _opened(self, plan: RunPlan, effects: Effects, *, pending: bool) -> str:
        sla = plan.graph.definition.options.sla_seconds
        if sla:
            await arm_sla(self.state, plan.instance_id, sla)
        self.plans.remember(plan)
        if not pending:  # a PENDING run's first decision must read its status (and begin it): general path
            self._cas.versions.remember(plan.instance_id, 1)
        self._announce(effects)
        return plan.instance_id

    async def record_refused_run(
        self,
        *,
        tenant_id: str,
        graph: Graph,
        run_input: Any,
        workflow_id: str,
        workflow_version: int,
        trigger: str,
        instance_id: str,
        reason: str,
    ) -> None:
        """A production run refused before it began (a schedule's start past a run budget): created and
        FAILED with ``reason`` in one transaction, its start node cancelled before it ran. A run with
        that id already existing fails on the primary key, as a second start would."""
        plan = RunPlan(instance_id, tenant_id, workflow_id, False, graph, {})
        async with self.state.transaction() as tx:
            effects = Effects(tx.now)
            decision = self._decision(tx, plan, effects)
            await open_run(
                decision,
                run_input=run_input,
                workflow_version=workflow_version,
                test_definition=None,
                trigger=trigger,
                timing=RunTiming(),
            )
            await fail_run(tx, instance_id, reason, effects)
        self._announce(effects)

    # -- results -----------------------------------------------------------------------------------
    async def handle_result(
        self,
        job: Job,
        outcome: NodeOutcome,
        *,
        claim_for: str | None = None,
        early_release: bool = False,
    ) -> Job | None:
        """Record a node attempt's outcome and take the decision it leads to.

        With ``claim_for`` the first node this starts (if due now) is leased to that worker in the same
        transaction and returned, so a chain runs without a claim round trip between its nodes. When it
        starts none, the freed slot is the worker's claim loop's to fill. (A claim of another run's job
        here, ``5b1ba21``, cost a read per node that mostly found the tenant at its share, and when it did
        claim, held the run's row for one job where the loop claims many outside it: a fan-out of 1,000
        on PostgreSQL ran at 0.72-0.78 ms per node with it, 1.1 when it could claim, 0.55-0.66 without.)

        Results of one run that arrive while a decision of that run is being taken wait for it and
        are then decided together (engine/batching.py).

        ``early_release`` (the worker, going on with the node it is leased): return before the decision
        is durable (storage/database.py); its effects are announced once it is. Otherwise this returns
        once it is durable.
        """
        delivery = Delivery.of(job, outcome, claim_for, early_release)
        if isinstance(outcome, Called):
            return await self._call_child(job, outcome, claim_for)
        if isinstance(outcome, Parked):
            await self._park(job, outcome)
            return None
        if isinstance(outcome, Completed) and outcome.iterations is not None:
            return await self._decide_alone(delivery)  # a loop's expansion is never batched
        return await self._batches.deliver(delivery)

    async def _decide_alone(self, delivery: Delivery) -> Job | None:
        job, outcome = delivery.job, delivery.outcome
        plan = await self.plans.get(job.instance_id, priority=job.priority)

        async def decide(tx: StateTransaction, status: RunStatus, effects: Effects) -> Job | None:
            return await self._decide_delivery(self._decision(tx, plan, effects, delivery.claim_for), delivery, status)

        async with self._cas.serialized(job.instance_id):
            if isinstance(outcome, Completed):
                if job.run_version is not None:  # claimed: the run's version then, for a run decided elsewhere
                    self._cas.versions.saw(job.instance_id, job.run_version)
                taken, follow = await self._steps.try_steps(
                    plan, job, outcome, delivery.claim_for, delivery.early_release
                )
                if taken:
                    return follow
            return await self._cas.decide_now(job.instance_id, decide, defer=delivery.early_release)

    async def _call_child(self, job: Job, called: Called, owner: str | None) -> Job | None:
        """A ``workflow`` node's call: the child run opened and the node parked, in one decision (engine/calls.py).
        Returns the child's start job leased to ``owner``, which goes on with it (no claim in between); a
        call past a run budget fails the node instead, and what that starts is returned alike."""
        plan = await self.plans.get(job.instance_id, priority=job.priority)
        call = called.call
        graph = await self.plans.version_graph(call.workflow_id, call.version)
        parent = ParentRef(job.instance_id, job.node_id, job.iteration, job.attempt)
        child = RunPlan(
            str(uuid.uuid4()), plan.tenant_id, call.workflow_id, plan.is_test, graph, {}, parent, plan.depth + 1
        )

        room = self.active_runs is None or await self.active_runs.admit(plan.tenant_id)

        async def decide(tx: StateTransaction, status: RunStatus, effects: Effects) -> tuple[bool, Job | None]:
            decision = self._decision(tx, plan, effects, owner)
            return await record_call(decision, job, called, status, child, self.limits, room=room)

        self.plans.remember(child)  # before the commit announces its start job: this process may run it
        called_now, started = await self._cas.decide(job.instance_id, decide) or (False, None)
        if not called_now:
            self.plans.forget(child.instance_id)
            return started
        if started is not None:  # a child queued by flow control is PENDING: its first decision must read that
            self._cas.versions.remember(child.instance_id, 1)
        if graph.definition.options.sla_seconds:
            await arm_sla(self.state, child.instance_id, graph.definition.options.sla_seconds)
        return started

    async def _park(self, job: Job, parked: Parked) -> None:
        """A ``wait`` node waits: its job parked in one decision, no worker slot held (engine/waits.py)."""

        async def decide(tx: StateTransaction, status: RunStatus, effects: Effects) -> None:
            await park_wait(tx, job, parked, status, effects)

        await self._cas.decide(job.instance_id, decide)

    async def _decide_together(self, batch: list[Delivery]) -> list[Job | None]:
        instance_id = batch[0].job.instance_id
        plan = await self.plans.get(instance_id)

        async def decide(tx: StateTransaction, status: RunStatus, effects: Effects) -> list[Job | None]:
            results: list[Job | None] = []
            for delivery in batch:
                own = Effects(tx.now)  # each decides as it would alone (its own "did I start anything")
                decision = self._decision(tx, plan, own, delivery.claim_for)
                try:
                    results.append(await self._decide_delivery(decision, delivery, status))
                except DuplicateDeliveryError:  # raised before it wrote anything: skip just this one
                    results.append(None)
                    continue
                effects.absorb(own)
                status = own.run_status or status
            return results

        defer = all(delivery.early_release for delivery in batch)
        async with self._cas.serialized(instance_id):
            return await self._cas.decide_now(instance_id, decide, defer=defer) or [None] * len(batch)

    @staticmethod
    async def _decide_delivery(decision: Decision, delivery: Delivery, status: RunStatus) -> Job | None:
        job, outcome = delivery.job, delivery.outcome
        if status is RunStatus.PENDING:  # a scheduled run's start node ran: the run begins now
            status = await decision.begin_run()
        if isinstance(outcome, Completed):
            return await decision.record_completion(job, outcome, status)
        assert isinstance(outcome, Failed), "a call is decided by _call_child, never batched"
        return await decision.record_failure(job, outcome, status)

    # -- run-level requests ------------------------------------------------------------------------
    async def cancel_run(self, instance_id: str, reason: str = "cancelled by request") -> bool:
        """Cancel a run that has not finished; ``False`` if it already had."""

        async def decide(tx: StateTransaction, status: RunStatus, effects: Effects) -> bool:
            if status in TERMINAL_RUN_STATUSES:
                return False
            await end_run(tx, instance_id, RunStatus.CANCELLED, reason, effects)
            effects.stopped_runs.append(instance_id)
            return True

        return bool(await self._cas.decide(instance_id, decide))

    async def fail_run(self, instance_id: str, reason: str) -> bool:
        """Fail a RUNNING or PENDING run from outside (run timeout or deadline, recovery); ``False`` if it
        was neither."""

        async def decide(tx: StateTransaction, status: RunStatus, effects: Effects) -> bool:
            if status not in (RunStatus.RUNNING, RunStatus.PENDING):
                return False
            await fail_run(tx, instance_id, reason, effects)
            return True

        return bool(await self._cas.decide(instance_id, decide))

    async def retry_run(self, instance_id: str, target: tuple[int, Graph] | None = None) -> list[str]:
        """Partial retry of a FAILED run: failed and interrupted nodes run again, completed outputs stay.

        ``target``: (version, graph) of the saved version to move the run to first ("retry with the
        latest version"): completed nodes that still exist keep their outputs, the rest run on it.
        Returns the ids of the nodes started again.
        """
        plan = await self.plans.get(instance_id)
        if target is not None:
            plan = dataclasses.replace(plan, graph=target[1])
        flow = await retry_flow(self.state, plan)

        async def decide(tx: StateTransaction, status: RunStatus, effects: Effects) -> list[str]:
            if status is not RunStatus.FAILED:
                raise RunStateError(f"only a FAILED run can be retried; run {instance_id} is {status.value}")
            return await apply_retry(self._decision(tx, plan, effects), None if target is None else target[0], flow)

        if target is not None:
            self.plans.remember(plan)  # before the commit announces the jobs: this process must run them on it
        try:
            started = await self._cas.decide(instance_id, decide) or []
        except BaseException:
            if target is not None:
                self.plans.forget(instance_id)
            raise
        if flow is not None:  # a queued (PENDING) run's next decision must read its status: general path
            self._cas.versions.forget(instance_id)
        return started
