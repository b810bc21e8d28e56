"""A partial retry's decision (``Orchestrator.retry_run``): a FAILED run's failed and interrupted nodes run
again from the log (engine/retry_plan.py), its completed outputs stay, and its workflow's
``options.concurrency`` holds as for a new run: with its group full the retry queues (PENDING, saying
why, its jobs parked until admission releases them; engine/flow_control.py ``place_retry``),
``cancel_in_progress`` cancels the oldest holders and ``cancel_newest`` refuses it (409, the run stays
FAILED)."""

from __future__ import annotations

from flowdeck.domain.scopes import child_scope
from flowdeck.domain.statuses import RunStatus
from flowdeck.engine.decision import Decision, Dispatch
from flowdeck.engine.flow_control import PARKED_SECONDS, FlowRequest, flow_request, place_retry, waiting_reason
from flowdeck.engine.plans import RunPlan
from flowdeck.engine.retry_plan import plan_retry
from flowdeck.engine.run_timing import RunTiming, deadline_for
from flowdeck.storage.flow import park_jobs
from flowdeck.storage.log_fold import RETRY_REASON
from flowdeck.storage.state import StateManager

__all__ = ("apply_retry", "retry_flow")


async def retry_flow(state: StateManager, plan: RunPlan) -> FlowRequest | None:
    """A production run whose (target) version has ``options.concurrency``: its group, from its input, at
    its own priority. Worked out before the retry's transaction (a key template may fail: 400)."""
    options = plan.graph.definition.options
    if plan.is_test or plan.workflow_id is None or options.concurrency is None:
        return None
    instance = await state.get_instance(plan.instance_id)
    return flow_request(plan.workflow_id, options, None if instance is None else instance.input, plan.priority)


async def apply_retry(decision: Decision, version: int | None, flow: FlowRequest | None) -> list[str]:
    """Retry the run of ``decision`` (after its CAS, the run FAILED), moved to ``version`` if given.
    Returns the ids of the nodes started again (queued ones included)."""
    tx, plan, effects = decision.tx, decision.plan, decision.effects
    instance_id, graph = plan.instance_id, plan.graph
    row = None if flow is None else await place_retry(tx, effects, flow, instance_id)
    queued = row is not None and row.waiting is not None
    moved = {} if version is None else {"version": version}
    if version is not None:
        await tx.set_workflow_version(instance_id, version)
    retry = plan_retry(graph, await tx.node_rows(instance_id), await tx.loop_states(instance_id))
    await tx.held.replace_barriers(instance_id, retry.barriers)
    for (loop_id, scope), finished in retry.loop_finished.items():
        await tx.set_loop_finished(instance_id, loop_id, scope, finished)
    for scope, node_id in retry.skip:
        await decision.skip(scope, [node_id])
    requested = RunTiming.from_payload(await tx.first_status_payload(instance_id)).deadline_at
    still_ahead = requested if requested is not None and requested > tx.now else None
    if queued:  # PENDING in its group's queue, no timeout before it begins (as a queued new run)
        why = f"{RETRY_REASON}; {waiting_reason(row, RunStatus.PENDING)}"
        await tx.set_run_status(instance_id, RunStatus.PENDING, reason=why, deadline_at=still_ahead, extra=moved)
        effects.run(instance_id, RunStatus.PENDING)
    else:
        deadline = deadline_for(tx.now, graph.definition.options.timeout_seconds, still_ahead)
        await tx.set_run_status(instance_id, RunStatus.RUNNING, reason=RETRY_REASON, deadline_at=deadline, extra=moved)
        effects.run(instance_id, RunStatus.RUNNING)
    for scope, node_id, attempt in retry.dispatch:
        await decision.dispatch(scope, [Dispatch(node_id, attempt)], None)
    for loop_id, scope, index in retry.start_iterations:
        await decision.advance(child_scope(scope, index), [(loop_id, "loop")], None)
    for loop_id, scope in retry.complete_loops:
        count, _, attempt = (await tx.loop_states(instance_id))[(loop_id, scope)]
        await decision.complete_loop(loop_id, scope, count, attempt)
        await decision.settle(scope, graph.loop_of(loop_id))
    await decision.settle("", None)
    if queued:  # admission makes them due when the group has room (engine/flow_control.py)
        await park_jobs(tx.conn, instance_id, tx.now + PARKED_SECONDS)
    return [node_id for _, node_id, _ in retry.dispatch]
