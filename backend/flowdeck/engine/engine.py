"""The engine facade: what the API, the CLI and the tests call. It wires the parts together.

Nothing here makes scheduling decisions (the orchestrator does) or touches tables (the state
manager does); it validates requests, turns them into orchestrator calls and waits for runs.
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Callable, Mapping
from typing import Any

from flowdeck.domain.approvals import Decision, Refusal
from flowdeck.domain.labels import LabelLimits, labels_from_body
from flowdeck.domain.problems import Problem, has_errors
from flowdeck.domain.retention import RetentionPolicy
from flowdeck.domain.statuses import NodeStatus, RunStatus
from flowdeck.engine.calls import ChildCascade
from flowdeck.engine.executor import NodeExecutor
from flowdeck.engine.flow_control import FlowAdmission, flow_request
from flowdeck.engine.latest_versions import LatestVersions
from flowdeck.engine.observer import EngineObserver, NullObserver
from flowdeck.engine.orchestrator import Orchestrator, RunStateError
from flowdeck.engine.plans import PlanCache, RunNotFoundError
from flowdeck.engine.pruning import Pruner
from flowdeck.engine.publisher import LocalPublisher, NodeUpdate, RunUpdate, SavedNotice, Subscription, Update
from flowdeck.engine.run_limits import ActiveRunsGate, RunLimits, TooManyActiveRunsError
from flowdeck.engine.run_timing import RunTiming
from flowdeck.engine.run_watch import RunOutcome, RunWatch
from flowdeck.engine.worker import Worker
from flowdeck.handlers.registry import HandlerRegistry
from flowdeck.handlers.wait import WaitHandler
from flowdeck.handlers.workflow_call import WorkflowCallHandler
from flowdeck.settings import DEFAULT_MAX_WAIT_SECONDS
from flowdeck.storage.approvals import ApprovalRow, ApprovalStore, Decider, DecisionAnswer, shown_decisions
from flowdeck.storage.children import ChildRuns
from flowdeck.storage.database import Database
from flowdeck.storage.records import InstanceRecord
from flowdeck.storage.state import StateManager
from flowdeck.storage.steps import LatestVersionChangedError
from flowdeck.storage.tenants import TenantStore
from flowdeck.storage.waits import APPROVAL, APPROVAL_PATH, ResumeAnswer, TokenInfo, WaitTokens
from flowdeck.storage.workflows import VersionNote, WorkflowRecord, WorkflowStore
from flowdeck.validation.definition import validate_definition

__all__ = ("DefinitionInvalidError", "Engine", "RunNotFoundError")

log = logging.getLogger(__name__)


class DefinitionInvalidError(Exception):
    """A definition has errors; ``problems`` holds every one of them (warnings too)."""

    def __init__(self, problems: list[Problem]) -> None:
        errors = [p for p in problems if p.severity == "error"]
        super().__init__(
            f"the workflow definition has {len(errors)} error(s): " + "; ".join(p.message for p in errors[:5])
        )
        self.problems = problems


class Engine:
    def __init__(
        self,
        db: Database,
        registry: HandlerRegistry,
        *,
        publisher: LocalPublisher | None = None,
        concurrency: int = 16,
        tenant_concurrency: int | None = None,
        lease_seconds: float = 30.0,
        poll_interval: float = 0.5,
        worker_id: str | None = None,
        observer: EngineObserver | None = None,
        clock: Callable[[], float] = time.time,
        limits: RunLimits | None = None,
        label_limits: LabelLimits | None = None,
        max_wait_seconds: float = DEFAULT_MAX_WAIT_SECONDS,
        retention: RetentionPolicy | None = None,
        priority_step_seconds: float = 1.0,
    ) -> None:
        """``clock``: the time in epoch seconds for the state store and the worker (tests pass a fake one);
        ``limits``: the run budgets (engine/run_limits.py); ``retention``: the server's default retention
        policy (FLOWDECK_RETENTION_*)."""
        self.db = db
        self.label_limits = label_limits or LabelLimits()
        self.observer: EngineObserver = observer or NullObserver()
        self.registry = registry
        self.state = StateManager.create(db, clock)
        self.workflows = WorkflowStore(db)
        self.tenants = TenantStore(db)
        self.plans = PlanCache(self.state, self.workflows, registry.default_handles())
        self.publisher = publisher or LocalPublisher()
        self.limits = limits or RunLimits()
        self.active_runs = ActiveRunsGate(self.tenants.active_runs, self.limits.tenant_active_runs)
        self.orchestrator = Orchestrator(
            self.state,
            self.plans,
            self.publisher,
            lease_seconds=lease_seconds,
            limits=self.limits,
            active_runs=self.active_runs,
        )
        self.executor = NodeExecutor(self.state, self.plans, registry, self.observer, self.label_limits)
        self.worker = Worker(
            self.state,
            self.orchestrator,
            self.executor,
            concurrency=concurrency,
            tenant_concurrency=tenant_concurrency,
            lease_seconds=lease_seconds,
            poll_interval=poll_interval,
            worker_id=worker_id,
            clock=clock,
            priority_step_seconds=priority_step_seconds,
        )
        self.children = ChildRuns(db)
        self.cascade = ChildCascade(self.children, self.orchestrator.cancel_run)
        self.orchestrator.end_listeners.append(self.cascade.run_ended)
        self.worker.sweep_hooks.append(self.cascade.sweep)
        self.pruner = Pruner(db, retention or RetentionPolicy(), clock=clock)
        self.worker.sweep_hooks.append(self.pruner.sweep_hook)  # finished runs past their retention
        registry.add(WorkflowCallHandler(self.workflows, self.children, self.orchestrator.cancel_run))
        self.waits = WaitTokens(db, clock)
        self.approvals = ApprovalStore(db, clock)
        registry.add(WaitHandler(self.waits, self.approvals, max_wait_seconds))
        self.publisher.attach(_ForgetFailedPlans(self.publisher, self.plans))
        self.flow = FlowAdmission(
            self.state,
            self.publisher,
            self.orchestrator.announce,
            step_seconds=priority_step_seconds,
            interval=max(poll_interval, 0.5),  # and at once when a run that may hold a slot ends here
            may_hold_slot=self.plans.may_hold_slot,
        )
        self._worker_running = False
        self.latest_versions = LatestVersions()
        self.publisher.on_notice(
            lambda saved: self.latest_versions.saw(saved.tenant_id, saved.workflow_id, saved.version)
        )
        self.definition_listeners: list[Callable[[], None]] = []
        """Called after a workflow is created, saved or deleted in this process (the scheduler re-reads)."""

    def attach_observer(self, observer: EngineObserver) -> None:
        """Report this engine's work to ``observer`` from now on (the metrics of ``GET /metrics``)."""
        self.observer = observer
        self.executor.observer = observer

    async def start(self, *, with_worker: bool = True) -> None:
        if with_worker:
            await self.worker.start()
            self._worker_running = True
            self.flow.start()

    async def stop(self, *, grace: float = 0.0) -> None:
        """Stop the worker; ``grace``: seconds the nodes already running may take to finish first."""
        await self.flow.stop()
        if self._worker_running:
            await self.worker.stop(grace=grace)
            self._worker_running = False
        await self.pruner.close()
        await self.cascade.close()
        await self.state.close()

    # -- definitions ---------------------------------------------------------------------------------
    def validate(self, raw: Any, *, raw_size: int | None = None) -> list[Problem]:
        return validate_definition(raw, self.registry, raw_size=raw_size)

    def _require_valid(self, raw: Any, raw_size: int | None = None) -> None:
        problems = self.validate(raw, raw_size=raw_size)
        if has_errors(problems):
            raise DefinitionInvalidError(problems)

    async def call_problems(self, tenant_id: str, definition: Any, own_id: str | None = None) -> list[Problem]:
        """``workflow`` nodes must call a workflow of the tenant (an error otherwise); calling the workflow
        being edited (``own_id``) is allowed, with a warning: only the nesting limit stops it at run time."""
        problems: list[Problem] = []
        nodes = definition.get("nodes") if isinstance(definition, dict) else None
        for node in nodes if isinstance(nodes, list) else []:
            if not isinstance(node, dict) or node.get("type") != "workflow" or not isinstance(node.get("config"), dict):
                continue
            node_id, called = node.get("id"), node["config"].get("workflowId")
            if not isinstance(called, str) or not isinstance(node_id, str):
                continue  # its shape is wrong: validation reports that
            path = "config.workflowId"
            if called == own_id:
                message = (
                    f"node '{node_id}' calls this workflow itself: it recurses until the nesting limit (10)"
                    " or the runs of its tree reach FLOWDECK_MAX_TREE_RUNS"
                )
                problems.append(Problem("calls_itself", message, "warning", node_id=node_id, path=path))
            elif await self.workflows.latest_version(tenant_id, called) is None:
                message = f"node '{node_id}': {path} is {called}, which is not a saved workflow here"
                problems.append(Problem("workflow_not_found", message, node_id=node_id, path=path))
        return problems

    async def create_workflow(
        self, tenant_id: str, definition: dict[str, Any], note: VersionNote | None = None
    ) -> WorkflowRecord:
        self._require_valid(definition)
        record = await self.workflows.create(tenant_id, definition, note)
        self.latest_versions.saw(tenant_id, record.id, record.version)
        self.definitions_changed()
        return record

    async def save_workflow(
        self,
        tenant_id: str,
        workflow_id: str,
        based_on: int,
        definition: dict[str, Any],
        note: VersionNote | None = None,
    ) -> int:
        self._require_valid(definition)
        version = await self.workflows.save_version(tenant_id, workflow_id, based_on, definition, note)
        self.latest_versions.saw(tenant_id, workflow_id, version)
        self.definitions_changed()
        return version

    async def delete_workflow(self, tenant_id: str, workflow_id: str) -> bool:
        """Delete a workflow (and what belongs to it); ``False`` if the tenant has no such workflow."""
        deleted = await self.workflows.delete(tenant_id, workflow_id)
        self.latest_versions.forget(tenant_id, workflow_id)
        if deleted:
            self.definitions_changed()
        return deleted

    def definitions_changed(self) -> None:
        for listener in self.definition_listeners:
            listener()

    # -- runs ----------------------------------------------------------------------------------------
    async def start_workflow_run(
        self,
        tenant_id: str,
        workflow_id: str,
        run_input: Any = None,
        *,
        trigger: str = "api",
        version: int | None = None,
        instance_id: str | None = None,
        timing: RunTiming | None = None,
        labels: Mapping[str, object] | None = None,
        requested_by: str | None = None,
        priority: int | None = None,
    ) -> str:
        """A production run of the latest saved version (or of ``version``, which must be the latest).

        ``timing``: a scheduled start and/or a deadline (engine/run_timing.py; checked by the caller).
        ``labels``: checked here (``LabelError`` naming the label) and stored with the run.

        ``requested_by``: the user who starts it (an API call's, a session's; none for a webhook or schedule).

        ``instance_id`` lets a caller choose the run's id: a second start with the same id fails on
        the primary key, which is how a schedule's due time starts exactly once across processes.

        ``TooManyActiveRunsError`` when the tenant has ``FLOWDECK_TENANT_ACTIVE_RUNS`` active runs.
        ``priority`` (1-100, checked by the caller) overrides the workflow's ``options.priority``; its flow
        control may queue the run or cancel it at once (engine/flow_control.py; ``FlowKeyError`` when a key
        template fails on the input).
        """
        given = self.label_limits.check(labels or {})
        # Only a start in one statement can check a remembered version; elsewhere (SQLite) it is read first.
        known = self.latest_versions.get(tenant_id, workflow_id) if self.state.starts_in_one_statement else None
        room = False
        while True:
            latest = known if known is not None else await self._read_latest(tenant_id, workflow_id)
            if latest is None or (version is not None and version != latest):
                if known is not None:  # what this process saw last may be stale: read it
                    known = None
                    continue
                raise LookupError(f"workflow {workflow_id} does not exist at version {version or 'latest'}")
            if not room:
                await self._require_room(tenant_id, trigger)
                room = True
            graph = await self.plans.version_graph(workflow_id, latest)  # versions never change: cached
            from_body = graph.definition.options.webhook_labels if trigger == "webhook" else None
            checked = given  # the query string's labels win over the body's
            if from_body:
                checked = self.label_limits.check({**labels_from_body(from_body, run_input), **given})
            flow = flow_request(workflow_id, graph.definition.options, run_input, priority)
            check_latest = known is not None
            if check_latest and not self.orchestrator.starts_in_one_statement(
                graph, timing=timing, labels=checked, flow=flow
            ):
                known = None  # a start that cannot check it reads it first
                continue
            try:
                instance_id = await self.orchestrator.start_run(
                    tenant_id=tenant_id,
                    graph=graph,
                    run_input=run_input,
                    workflow_id=workflow_id,
                    workflow_version=latest,
                    trigger=trigger,
                    instance_id=instance_id,
                    timing=timing,
                    labels=checked,
                    requested_by=requested_by,
                    flow=flow,
                    check_latest=check_latest,
                )
            except LatestVersionChangedError:
                self.latest_versions.forget(tenant_id, workflow_id)
                known = None
                continue
            self.observer.run_started(trigger)
            return instance_id

    def _saved_elsewhere(self, saved: SavedNotice) -> None:
        self.latest_versions.saw(saved.tenant_id, saved.workflow_id, saved.version)

    async def _read_latest(self, tenant_id: str, workflow_id: str) -> int | None:
        latest = await self.workflows.latest_version(tenant_id, workflow_id)
        if latest is None:
            self.latest_versions.forget(tenant_id, workflow_id)
        else:
            self.latest_versions.saw(tenant_id, workflow_id, latest)
        return latest

    async def start_test_run(
        self,
        tenant_id: str,
        definition: dict[str, Any],
        run_input: Any = None,
        *,
        pinned: Mapping[str, Any] | None = None,
        workflow_id: str | None = None,
        requested_by: str | None = None,
    ) -> str:
        """Run an unsaved graph; it is stored in the run's SYSTEM_SET row and read from there.

        ``workflow_id`` (checked by the caller to be the tenant's) files the run under that workflow's
        history; the run still runs the graph given here, never a stored version.
        """
        self._require_valid(definition)
        graph = self.plans.test_graph(definition)
        unknown = sorted(set(pinned or {}) - set(graph.nodes))
        if unknown:
            raise DefinitionInvalidError(
                [
                    Problem("invalid_pin", f"pinned node '{n}' is not in the graph", node_id=n, path=f"pinned.{n}")
                    for n in unknown
                ]
            )
        await self._require_room(tenant_id, "test")
        instance_id = await self.orchestrator.start_run(
            tenant_id=tenant_id,
            graph=graph,
            run_input=run_input,
            test_definition=definition,
            pinned=pinned,
            trigger="test",
            workflow_id=workflow_id,
            requested_by=requested_by,
        )
        self.observer.run_started("test")
        return instance_id

    async def _require_room(self, tenant_id: str, trigger: str) -> None:
        """Refuse a start from outside when the tenant has ``FLOWDECK_TENANT_ACTIVE_RUNS`` active runs."""
        if await self.active_runs.admit(tenant_id):
            return
        limit = self.limits.tenant_active_runs
        self.observer.run_refused("tenant_active_runs", trigger)
        log.warning(
            "refused a %s start of tenant %s: it has %d active runs (FLOWDECK_TENANT_ACTIVE_RUNS)",
            trigger,
            tenant_id,
            limit,
        )
        raise TooManyActiveRunsError(limit)

    async def record_refused_run(
        self, tenant_id: str, workflow_id: str, run_input: Any, *, trigger: str, instance_id: str, reason: str
    ) -> None:
        """Keep a trace of a start that was refused where nobody hears a 429 (a schedule's due time): a
        FAILED run of the latest version whose error says why, so the tenant sees it in the run history
        and ``options.onFailure`` hears of it. ``LookupError`` when the workflow is gone; a taken
        ``instance_id`` fails on the primary key."""
        latest = await self.workflows.latest_version(tenant_id, workflow_id)
        if latest is None:
            raise LookupError(f"workflow {workflow_id} does not exist")
        graph = await self.plans.version_graph(workflow_id, latest)
        await self.orchestrator.record_refused_run(
            tenant_id=tenant_id,
            graph=graph,
            run_input=run_input,
            workflow_id=workflow_id,
            workflow_version=latest,
            trigger=trigger,
            instance_id=instance_id,
            reason=reason,
        )

    async def cancel_run(self, instance_id: str) -> bool:
        return await self.orchestrator.cancel_run(instance_id)

    async def retry_run(self, instance_id: str, version: str = "original") -> list[str]:
        """Partial retry of a FAILED run on the version it ran (``original``) or the latest saved one."""
        if version == "original":
            return await self.orchestrator.retry_run(instance_id)
        plan = await self.plans.get(instance_id)
        workflow_id = plan.workflow_id or ""
        latest = None if plan.is_test else await self.workflows.latest_version(plan.tenant_id, workflow_id)
        if plan.is_test or latest is None:
            what = "a test run has no saved versions" if plan.is_test else "its workflow was deleted"
            raise RunStateError(f"run {instance_id} cannot move to the latest version: {what}")
        graph = await self.plans.version_graph(workflow_id, latest)
        return await self.orchestrator.retry_run(instance_id, (latest, graph))

    async def delete_test_run(self, instance_id: str) -> bool:
        """Stop a test run's in-flight work and delete every row of it, and of the test runs it called."""
        children = await self.children.descendants(instance_id)
        for run_id in (instance_id, *children):
            with contextlib.suppress(RunNotFoundError):
                await self.orchestrator.cancel_run(run_id, reason="test run deleted")
        deleted = await self.state.delete_test_instance(instance_id)
        for child_id in children:
            await self.state.delete_test_instance(child_id)
        return deleted

    async def resume_wait(self, token: str, output: Any) -> tuple[ResumeAnswer, TokenInfo | None]:
        """Resume the ``wait`` node of ``token`` (storage/waits.py) and wake a worker for it at once, in this
        process and, through the fan-out's job listener, in the others."""
        answer, info = await self.waits.resume(token, output)
        if answer == "resumed":
            self._wake_workers()
        return answer, info

    async def decide_approval(
        self, row: ApprovalRow, decider: Decider, decision: Decision, comment: str | None
    ) -> tuple[DecisionAnswer | Refusal, ApprovalRow]:
        """Record a decision on an approval (storage/approvals.py); one that resolves it wakes a worker."""
        answer, row = await self.approvals.decide(row, decider, decision, comment)
        if answer == "resolved":
            self._wake_workers()
        elif answer == "counted":
            await self._announce_decisions(row)
        return answer, row

    async def _announce_decisions(self, row: ApprovalRow) -> None:
        """A decision that counted without resolving: the node, still WAITING, is announced again with the
        decisions so far in its ``waitingFor`` (a run page shows "1 of 2 approvals", a badge refreshes)."""
        attempt = await self.approvals.parked_attempt(row)
        if attempt is None:
            return
        waiting = {
            "resumeOn": APPROVAL,
            "url": APPROVAL_PATH + row.id,
            "approvalId": row.id,
            "until": row.until,
            "required": row.rule.required,
            "decisions": shown_decisions(row.decisions),
        }
        now = self.waits.clock()
        update = NodeUpdate(
            row.instance_id, row.node_id, row.iteration, NodeStatus.WAITING, attempt, now, waiting_for=waiting
        )
        self.publisher.publish([update])

    def _wake_workers(self) -> None:
        """A parked node was made due now: wake a worker here and, through the fan-out, in the others."""
        now = self.waits.clock()
        for listener in self.orchestrator.job_listeners:
            listener(now)

    def watch_run(self, instance_id: str | None = None) -> RunWatch:
        """The updates of run ``instance_id`` (or of a new id to start a run with) from now on, to wait for
        its end (engine/run_watch.py); a context manager."""
        return RunWatch(self.publisher, self.state, instance_id)

    async def wait_for_outcome(self, instance_id: str, timeout: float) -> RunOutcome:
        """Wait until the run has ended (or ``timeout`` passes): its status, output and error then."""
        with self.watch_run(instance_id) as watch:
            return await watch.outcome(timeout)

    async def wait_for_run(self, instance_id: str, timeout: float) -> InstanceRecord:
        """Wait until the run has ended (or ``timeout`` passes); returns its latest record."""
        with self.watch_run(instance_id) as watch:
            await watch.outcome(timeout)
            return await watch.record()


class _ForgetFailedPlans(Subscription):
    """Forgets the cached plan of every run this process hears fail, its own or (relayed) another's: a
    partial retry may move a failed run to the workflow's latest version."""

    def __init__(self, publisher: LocalPublisher, plans: PlanCache) -> None:
        super().__init__(publisher, None, 1, runs_only=True)
        self._plans = plans

    def offer(self, update: Update) -> None:
        if isinstance(update, RunUpdate) and update.status is RunStatus.FAILED:
            self._plans.forget(update.instance_id)
