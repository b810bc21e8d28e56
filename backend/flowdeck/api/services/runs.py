"""Runs: start production and test runs, delete test runs, read lists, detail, log and timeline, cancel, retry."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from litestar.exceptions import NotFoundException, ValidationException

from flowdeck.api.inputs import check_json
from flowdeck.api.pagination import NumberKey, TimeKey, decode_cursor, encode_cursor
from flowdeck.api.schemas import (
    DecisionOut,
    EventOut,
    EventPage,
    NodeStateOut,
    OutputTruncatedOut,
    RunActionOut,
    RunCountOut,
    RunDetail,
    RunPage,
    RunSummary,
    StartTestRun,
    TimelinePage,
    TimelineRowOut,
    WaitingForOut,
)
from flowdeck.api.services.definition_checks import SaveChecks, definition_of
from flowdeck.api.services.node_details import NodeDetailService
from flowdeck.domain.flow_control import DEFAULT_PRIORITY
from flowdeck.domain.statuses import NodeStatus, RunStatus
from flowdeck.engine.engine import Engine
from flowdeck.engine.flow_control import waiting_reason
from flowdeck.engine.orchestrator import RunStateError
from flowdeck.engine.output_view import ShownOutputs
from flowdeck.engine.plans import RunNotFoundError
from flowdeck.engine.projection import GraphShape, NodeView
from flowdeck.engine.run_timing import RunTiming, TimingError
from flowdeck.storage.approvals import shown_decisions
from flowdeck.storage.records import InstanceRecord
from flowdeck.storage.run_queries import COUNT_CAP, RunFilter, RunQueries, RunView

__all__ = ("RunService",)


def _summary_fields(run: InstanceRecord, labels: dict[str, str] | None = None) -> dict[str, Any]:
    return {
        "labels": labels or {},
        "instance_id": run.id,
        "workflow_id": run.workflow_id,
        "version": run.workflow_version,
        "is_test": run.is_test,
        "status": run.status,
        "trigger": run.trigger,
        "error": run.error,
        "created_at": run.created_at,
        "started_at": run.started_at,
        "completed_at": run.completed_at,
        "available_at": run.started_at if run.status is RunStatus.PENDING else None,
        "sla_breached_at": run.sla_breached_at,
        "parent_instance_id": run.parent_instance_id,
        "parent_node_id": run.parent_node_id,
    }


def _truncated(found: dict[str, Any] | None) -> OutputTruncatedOut | None:
    return None if found is None else OutputTruncatedOut(**found)


def _node_out(view: NodeView, shown: ShownOutputs, node_id: str, iteration: str = "") -> NodeStateOut:
    output, truncated = shown.show(view.output, node_id, iteration)
    return NodeStateOut(
        status=view.status,
        attempt=view.attempt,
        started_at=view.started_at,
        completed_at=view.completed_at,
        output=output,
        output_truncated=_truncated(truncated),
        error=view.error,
        pinned=view.pinned,
        logs=view.logs,
        next_attempt_at=view.next_attempt_at,
        worker_id=view.worker_id,
        attempt_in_retry=view.attempt_in_retry,
        retry=view.retry,
        child_instance_id=view.child_instance_id,
        waiting_for=_waiting_for(view),
        loop=shown.loop(view.loop, node_id, iteration),
        iterations={k: _node_out(v, shown, node_id, k) for k, v in view.iterations.items()} or None,
    )


def _waiting_for(view: NodeView) -> WaitingForOut | None:
    shown = view.waiting_for
    if shown is None or view.status is not NodeStatus.WAITING:
        return None
    return WaitingForOut(
        resume_on=shown["resumeOn"], url=shown.get("url"), until=shown["until"], approval_id=shown.get("approvalId")
    )


def checked_timing(timing: RunTiming | None) -> RunTiming | None:
    """A scheduled start and deadline the engine can honour, or a 400 naming the field."""
    if timing is None or (timing.available_at is None and timing.deadline_at is None):
        return None
    try:
        return timing.check()
    except TimingError as exc:
        raise ValidationException(detail=str(exc), extra=[{"key": exc.field, "message": str(exc)}]) from exc


def _missing(instance_id: str, what: str = "run") -> NotFoundException:
    return NotFoundException(detail=f"{what} {instance_id} not found")


class RunService:
    def __init__(self, engine: Engine, queries: RunQueries, checks: SaveChecks) -> None:
        self.engine = engine
        self.queries = queries
        self.checks = checks
        """The checks of a save: a test run refuses what saving the same graph would."""
        self.nodes = NodeDetailService(engine, queries)
        """One node of a run per iteration and attempt (the editor's node details view)."""

    # -- starting and stopping -----------------------------------------------------------------------
    async def start(
        self,
        tenant_id: str,
        workflow_id: str,
        run_input: Any,
        timing: RunTiming | None = None,
        labels: Mapping[str, object] | None = None,
        trigger: str = "api",
        requested_by: str | None = None,
        priority: int | None = None,
    ) -> str:
        check_json(input=run_input)
        timing = checked_timing(timing)
        try:
            return await self.engine.start_workflow_run(
                tenant_id,
                workflow_id,
                run_input,
                trigger=trigger,
                timing=timing,
                labels=labels,
                requested_by=requested_by,
                priority=priority,
            )
        except LookupError as exc:  # unknown, deleted, or another tenant's
            raise NotFoundException(detail=f"workflow {workflow_id} not found") from exc

    async def start_test(self, tenant_id: str, body: StartTestRun, requested_by: str | None = None) -> str:
        definition = definition_of(body)
        check_json(input=body.input, pinned=body.pinned)
        if (
            body.workflow_id is not None
            and await self.engine.workflows.latest_version(tenant_id, body.workflow_id) is None
        ):
            raise NotFoundException(detail=f"workflowId: workflow {body.workflow_id} not found")
        await self.checks.require(tenant_id, definition, body.workflow_id)
        return await self.engine.start_test_run(
            tenant_id,
            definition,
            body.input,
            pinned=body.pinned,
            workflow_id=body.workflow_id,
            requested_by=requested_by,
        )

    async def delete_test(self, tenant_id: str, instance_id: str) -> None:
        run = await self.queries.get_run(tenant_id, instance_id)
        if run is None or not run.is_test:
            raise _missing(instance_id, "test run")
        await self.engine.delete_test_run(instance_id)

    async def cancel(self, tenant_id: str, instance_id: str) -> RunActionOut:
        await self._require(tenant_id, instance_id)
        if not await self.engine.cancel_run(instance_id):
            run = await self._require(tenant_id, instance_id)
            raise RunStateError(f"run {instance_id} has already finished ({run.status.value})")
        return RunActionOut(instance_id=instance_id, status=RunStatus.CANCELLED)

    async def retry(self, tenant_id: str, instance_id: str, version: str = "original") -> RunActionOut:
        await self._require(tenant_id, instance_id)
        node_ids = await self.engine.retry_run(instance_id, version)
        run = await self._require(tenant_id, instance_id)
        return RunActionOut(instance_id=instance_id, status=run.status, node_ids=node_ids)

    async def _require(self, tenant_id: str, instance_id: str) -> InstanceRecord:
        run = await self.queries.get_run(tenant_id, instance_id)
        if run is None:
            raise _missing(instance_id)
        return run

    # -- reading -------------------------------------------------------------------------------------
    async def view(self, tenant_id: str, instance_id: str) -> RunView | None:
        """The run and its nodes as every read shows them (REST and the live snapshot alike)."""
        return await self.queries.run_view(tenant_id, instance_id, self._shape_of)

    async def _shape_of(self, run: InstanceRecord) -> GraphShape | None:
        try:
            graph = (await self.engine.plans.get(run.id)).graph
        except RunNotFoundError:
            return None  # its graph cannot be read (a deleted version): what has rows is still shown
        return GraphShape({node_id: graph.loop_of(node_id) for node_id in graph.nodes})

    async def list(self, tenant_id: str, filters: RunFilter, cursor: str | None, limit: int) -> RunPage:
        runs, after = await self.queries.list_runs(tenant_id, filters, decode_cursor(cursor, TimeKey), limit)
        labels = await self.queries.labels_of(r.id for r in runs)
        retries = await self.queries.retries_of(r.id for r in runs if r.status is not RunStatus.PENDING)
        items = [RunSummary(**_summary_fields(r, labels.get(r.id)), retry=retries.get(r.id, 0)) for r in runs]
        return RunPage(items=items, next_cursor=encode_cursor(after))

    async def count(self, tenant_id: str, filters: RunFilter) -> RunCountOut:
        found = await self.queries.count_runs(tenant_id, filters)
        return RunCountOut(count=min(found, COUNT_CAP), more=found > COUNT_CAP)

    async def detail(self, tenant_id: str, instance_id: str) -> RunDetail:
        view = await self.view(tenant_id, instance_id)
        if view is None:
            raise _missing(instance_id)
        run = view.run
        shown = ShownOutputs(run.id)  # the whole answer shows a bounded amount of output (engine/output_view.py)
        output, truncated = shown.show(run.output, None)
        nodes = {node_id: _node_out(v, shown, node_id) for node_id, v in view.nodes.items()}
        await self._decisions_so_far(tenant_id, run.id, nodes)
        labels = (await self.queries.labels_of([run.id])).get(run.id)
        flow_row = await self.queries.flow_of(run.id)
        return RunDetail(
            priority=flow_row.priority if flow_row else DEFAULT_PRIORITY,
            waiting_reason=waiting_reason(flow_row, run.status),
            **_summary_fields(run, labels),
            input=run.input,
            output=output,
            output_truncated=_truncated(truncated),
            nodes=nodes,
            retry=view.retries,
        )

    async def _decisions_so_far(self, tenant_id: str, instance_id: str, nodes: Mapping[str, NodeStateOut]) -> None:
        """A waiting approval with decisions counted shows them and how many it needs (as the live update does)."""
        waiting: dict[str, WaitingForOut] = {}
        for node in nodes.values():
            for each in [node, *(node.iterations or {}).values()]:
                if each.waiting_for is not None and each.waiting_for.approval_id is not None:
                    waiting[each.waiting_for.approval_id] = each.waiting_for
        for row in await self.engine.approvals.of_run(tenant_id, instance_id, list(waiting)):
            if row.decisions:
                shown = waiting[row.id]
                shown.required = row.rule.required
                shown.decisions = [DecisionOut(**d) for d in shown_decisions(row.decisions)]

    async def full_output(self, tenant_id: str, instance_id: str, node_id: str | None, iteration: str) -> Any:
        """One node's (or one iteration's) latest output in full, or the run's own with no ``node_id``."""
        view = await self.queries.run_view(tenant_id, instance_id)
        if view is None:
            raise _missing(instance_id)
        if node_id is None:
            return view.run.output
        node = view.nodes.get(node_id)
        if node is not None and iteration:
            node = node.iterations.get(iteration)
        if node is None:
            where = f" iteration {iteration!r}" if iteration else ""
            raise NotFoundException(detail=f"run {instance_id} has no node {node_id!r}{where}")
        return node.output

    async def events(self, tenant_id: str, instance_id: str, cursor: str | None, limit: int) -> EventPage:
        page = await self.queries.events(tenant_id, instance_id, decode_cursor(cursor, NumberKey) or 0, limit)
        if page is None:
            raise _missing(instance_id)
        rows, after = page
        shown = ShownOutputs(instance_id)
        items = [
            EventOut(
                log_id=r.log_id,
                instance_id=r.instance_id,
                node_id=r.node_id,
                iteration=r.iteration,
                event_type=r.event_type,
                node_status=r.node_status,
                output_variable=r.output_variable,
                payload=payload,
                payload_truncated=_truncated(truncated),
                error_message=r.error_message,
                node_attempt=r.node_attempt,
                created_at=r.created_at,
            )
            for r in rows
            for payload, truncated in [shown.show(r.payload, r.node_id, r.iteration)]
        ]
        return EventPage(items=items, next_cursor=encode_cursor(after))

    async def timeline(self, tenant_id: str, instance_id: str) -> TimelinePage:
        rows = await self.queries.timeline(tenant_id, instance_id)
        if rows is None:
            raise _missing(instance_id)
        items = [
            TimelineRowOut(
                node_id=r.node_id,
                iteration=r.iteration,
                attempt=r.attempt,
                status=r.status,
                started_at=r.started_at,
                completed_at=r.completed_at,
                worker_id=r.worker_id,
                taken_over=r.taken_over,
                retry=r.retry,
                attempt_in_retry=r.attempt_in_retry,
            )
            for r in rows
        ]
        return TimelinePage(items=items)
