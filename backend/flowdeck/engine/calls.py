"""Sub-workflows in the engine: a ``workflow`` node's call, and the cascade that stops a caller's children.

A call is one decision of the caller (``record_call``): the call's row in the caller's log, the
calling node's job parked until its timeout, and the child run with its start node queued, all in one
transaction, so a crash leaves either all of them or none, and a repeated delivery is a no-op (the
unique index on the call row). The child's ending wakes the parked job (storage/children.py); the
node's handler then reads the child's outcome (handlers/workflow_call.py).

A caller that fails or is cancelled cancels its unfinished children at once, in this process, after
its decision committed (``ChildCascade.run_ended``); if this process stops first, the worker sweep
finds the orphans (``ChildCascade.sweep``). A cancelled child's own children follow the same way.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable

from flowdeck.domain.statuses import EventType, NodeStatus, RunStatus
from flowdeck.engine.cas import DuplicateDeliveryError
from flowdeck.engine.decision import Decision
from flowdeck.engine.effects import Effects, job_key
from flowdeck.engine.flow_control import FlowKeyError, flow_request
from flowdeck.engine.outcomes import Called, Failed
from flowdeck.engine.plans import RunPlan
from flowdeck.engine.run_limits import RunLimits, call_refused
from flowdeck.engine.run_start import open_run
from flowdeck.engine.run_timing import RunTiming
from flowdeck.storage.children import CALL_KEY, ChildRuns, count_tree_run, deadline_of, requester_of
from flowdeck.storage.records import Job, LogEvent

__all__ = ("CHILD_TRIGGER", "ChildCascade", "record_call")

log = logging.getLogger(__name__)

CHILD_TRIGGER = "workflow"
"""The trigger of a run a ``workflow`` node started."""


async def record_call(
    decision: Decision, job: Job, called: Called, status: RunStatus, child: RunPlan, limits: RunLimits, *, room: bool
) -> tuple[bool, Job | None]:
    """Record the call, park the calling node and open the child run, its start node leased to the
    decision's owner (who goes on with it). ``(False, None)`` when the caller no longer runs (nothing
    written). A call past a run budget (engine/run_limits.py) fails the node instead: ``(False, the job
    that failure starts)``; ``room``: whether the tenant's active runs leave room for the child (counted
    before, engine/run_limits.py ``ActiveRunsGate``). Raises ``DuplicateDeliveryError`` (roll back) for a
    repeated call or when a newer attempt holds the node."""
    if status is not RunStatus.RUNNING:
        return False, None  # the run ended meanwhile: its jobs are gone, nothing to call for
    tx, call = decision.tx, called.call
    try:  # a child of a workflow with flow control queues, cancels or is cancelled like any run of it
        flow = (
            None if child.is_test else flow_request(call.workflow_id, child.graph.definition.options, call.input, None)
        )
    except FlowKeyError as exc:
        return False, await decision.record_failure(job, Failed("FlowKeyError", str(exc), retryable=False), status)
    if not room:
        return False, await decision.record_failure(job, call_refused(limits, tree_full=False), status)
    root = await count_tree_run(tx.conn, job.instance_id, limits.max_tree_runs)
    if root is None:
        return False, await decision.record_failure(job, call_refused(limits, tree_full=True), status)
    record = {"instanceId": child.instance_id, "workflowId": call.workflow_id, "version": call.version}
    row = LogEvent(
        job.instance_id,
        EventType.SYSTEM_SET,
        node_id=job.node_id,
        iteration=job.iteration,
        output_variable=CALL_KEY,
        payload={CALL_KEY: record},
        node_attempt=job.attempt,
    )
    if await tx.log_event(row) is None:
        raise DuplicateDeliveryError
    until = tx.now + decision.graph.timeout_seconds(job.node_id)
    if not await tx.jobs.park(job, until):
        raise DuplicateDeliveryError  # a newer attempt took the node over: this one calls nothing
    opened = Effects(tx.now)
    _, started, _ = await open_run(
        Decision(tx, child, opened, owner=decision.owner, lease_seconds=decision.lease_seconds),
        run_input=call.input,
        workflow_version=call.version,
        test_definition=call.definition if child.is_test else None,
        trigger=CHILD_TRIGGER,
        timing=RunTiming(deadline_at=await deadline_of(tx.conn, job.instance_id)),  # the caller's deadline covers it
        claim=decision.owner is not None,
        root_instance_id=root,
        requested_by=await requester_of(tx.conn, job.instance_id),
        flow=flow,
    )
    decision.effects.absorb(opened)
    decision.effects.node(job_key(job), NodeStatus.RUNNING, job.attempt, child_instance_id=child.instance_id)
    decision.effects.wake_at.append(until)  # the node's timeout, unless the child wakes it first
    return True, started


CancelRun = Callable[[str, str], Awaitable[bool]]


class ChildCascade:
    """Cancels the unfinished children of a run that failed or was cancelled."""

    def __init__(self, children: ChildRuns, cancel: CancelRun) -> None:
        self._children = children
        self._cancel = cancel
        self._tasks: set[asyncio.Task[None]] = set()

    def run_ended(self, instance_id: str, status: RunStatus) -> None:
        """An announcer listener: ``instance_id`` just ended with ``status`` (committed)."""
        if status not in (RunStatus.FAILED, RunStatus.CANCELLED):
            return
        task = asyncio.get_running_loop().create_task(self._cancel_children(instance_id, status))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _cancel_children(self, parent_id: str, status: RunStatus) -> None:
        try:
            for child_id in await self._children.unfinished_children(parent_id):
                await self._cancel(child_id, f"the run that called it ({parent_id}) was {status.value.lower()}")
        except Exception:  # the sweep retries what this missed
            log.exception("cancelling the children of run %s failed", parent_id)

    async def sweep(self, now: float) -> None:
        """A worker sweep hook: cancel the children whose caller ended while no cascade ran."""
        for child_id, parent_id in await self._children.orphans():
            await self._cancel(child_id, f"the run that called it ({parent_id}) has ended")

    async def idle(self) -> None:
        """Return once no cascade is under way (one may start another: a cancelled child's own children)."""
        while self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)

    async def close(self) -> None:
        for task in list(self._tasks):
            task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.gather(*self._tasks, return_exceptions=True)
