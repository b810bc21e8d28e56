"""A run's first rows, written inside a decision's transaction: a run started from outside (the
orchestrator's ``start_run``) and a child run a ``workflow`` node calls (engine/calls.py) are opened alike."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NamedTuple

from flowdeck.domain.statuses import EventType, RunStatus
from flowdeck.engine.decision import Decision, Dispatch, end_run, run_status_event
from flowdeck.engine.flow_control import PARKED_SECONDS, FlowRequest, place_new_run, waiting_reason
from flowdeck.engine.run_timing import RunTiming
from flowdeck.engine.waits import open_wait_tokens
from flowdeck.storage.flow import add_flow_row
from flowdeck.storage.log_rows import input_event
from flowdeck.storage.records import Job, LogEvent
from flowdeck.storage.run_labels import write_labels
from flowdeck.storage.state import DEFINITION_KEY, PINNED_KEY, run_context

__all__ = ("OpenedRun", "open_run")


class OpenedRun(NamedTuple):
    pending: bool
    """PENDING until ``timing.available_at`` (or queued by its flow control)."""
    started: Job | None
    """With ``claim``: the start node's job, leased to the decision's owner (when due now)."""
    rows: tuple[LogEvent, ...]
    """The run-level rows it logged."""

    def start_context(self) -> dict[str, Any]:
        """The start node's context (``state.run_context``): who runs it need not read it back."""
        return run_context(self.rows)


async def open_run(
    decision: Decision,
    *,
    run_input: Any,
    workflow_version: int | None,
    test_definition: Any,
    trigger: str,
    timing: RunTiming,
    claim: bool = False,
    root_instance_id: str | None = None,
    labels: Mapping[str, str] | None = None,
    requested_by: str | None = None,
    flow: FlowRequest | None = None,
) -> OpenedRun:
    """Create the run of ``decision.plan`` (its instance, INPUT_SET, a test run's definition, RUN_STATUS)
    and queue its start node (``claim``: leased to the decision's owner, when due now). A called run names its
    tree's ``root_instance_id``; ``requested_by`` is the user who started it (a called run: its
    caller's); ``labels`` (checked by the caller) are written with the run. ``flow``: its flow control
    (engine/flow_control.py), which may queue it (PENDING, its start job parked until admitted) or cancel
    it at once."""
    tx, plan, effects = decision.tx, decision.plan, decision.effects
    graph, instance_id = plan.graph, plan.instance_id
    delay = max(0.0, timing.available_at - tx.now) if timing.available_at is not None else 0.0
    placement, flow_row = (
        (None, None) if flow is None else await place_new_run(tx, effects, flow, instance_id, timing.available_at)
    )
    queued = placement is not None and placement.waiting is not None
    if queued:
        delay = PARKED_SECONDS
    pending = delay > 0
    await tx.create_instance(
        instance_id=instance_id,
        tenant_id=plan.tenant_id,
        workflow_id=plan.workflow_id,
        workflow_version=workflow_version,
        is_test=plan.is_test,
        trigger=trigger,
        run_input=run_input,
        timeout_seconds=graph.definition.options.timeout_seconds,
        available_at=timing.available_at if pending and not queued else None,
        queued=queued,
        deadline_at=timing.deadline_at,
        parent=plan.parent,
        depth=plan.depth,
        root_instance_id=root_instance_id,
        requested_by=requested_by,
    )
    if labels:
        await write_labels(tx.conn, instance_id, labels)
    events = [input_event(instance_id, run_input)]
    if plan.is_test:
        events.append(
            LogEvent(
                instance_id,
                EventType.SYSTEM_SET,
                output_variable=DEFINITION_KEY,
                payload={DEFINITION_KEY: test_definition, PINNED_KEY: dict(plan.pinned)},
            )
        )
    waits = await open_wait_tokens(tx, instance_id, plan.tenant_id, graph)
    if waits is not None:
        events.append(waits)
    status = RunStatus.PENDING if pending else RunStatus.RUNNING
    extra: dict[str, Any] = dict(timing.payload())
    if flow_row is not None:
        await add_flow_row(tx.conn, flow_row)
        reason = waiting_reason(flow_row, status)
        extra = {**extra, "priority": flow_row.priority, **({"reason": reason} if reason else {})}
    events.append(run_status_event(instance_id, status, extra))
    await tx.log_event_bulk(events)
    effects.run(instance_id, status)
    if placement is not None and placement.cancel_reason is not None:
        reason = placement.cancel_reason
        await end_run(tx, instance_id, RunStatus.CANCELLED, reason, effects, error=reason)
        return OpenedRun(False, None, tuple(events))
    started = await decision.dispatch("", [Dispatch(graph.start_id)], delay or None, claim=claim)
    await decision.finish_if_done()
    return OpenedRun(pending, started, tuple(events))
