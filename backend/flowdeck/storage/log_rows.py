"""The log rows the state store writes on its own (dispatch guards, starts, results, run statuses) and the
read of a run's first status row, shared by the portable and the dialects' stores."""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa

from flowdeck.domain.statuses import EventType, NodeStatus, RunStatus
from flowdeck.storage.jobs import NewJob
from flowdeck.storage.records import Job, LogEvent
from flowdeck.storage.statements import LOG_COLUMNS
from flowdeck.storage.tables import instance_logs

__all__ = (
    "completed_event",
    "dispatched_event",
    "first_status_payload",
    "input_event",
    "input_payload",
    "log_page",
    "run_status_payload",
    "started_event",
    "started_payload",
)


def log_page(instance_id: str, after_log_id: int = 0, limit: int | None = None) -> sa.Select[Any]:
    """A run's log rows after ``after_log_id``, in log order (``ix_instance_logs_instance_log``)."""
    stmt = (
        sa.select(*LOG_COLUMNS)
        .where(instance_logs.c.instance_id == instance_id, instance_logs.c.log_id > after_log_id)
        .order_by(instance_logs.c.log_id)
    )
    return stmt if limit is None else stmt.limit(limit)


def input_payload(run_input: Any) -> dict[str, Any]:
    """The INPUT_SET row's payload: the run's input."""
    return {"input": run_input}


def input_event(instance_id: str, run_input: Any) -> LogEvent:
    """A run's INPUT_SET row (its first transaction logs it; a start node's context folds it)."""
    return LogEvent(instance_id, EventType.INPUT_SET, payload=input_payload(run_input))


def run_status_payload(status: RunStatus, reason: str | None) -> dict[str, Any]:
    """The RUN_STATUS row's payload."""
    payload: dict[str, Any] = {"status": status.value}
    if reason:
        payload["reason"] = reason
    return payload


def first_status_payload(instance_id: str) -> Any:
    return (
        sa.select(instance_logs.c.payload)
        .where(instance_logs.c.instance_id == instance_id, instance_logs.c.event_type == EventType.RUN_STATUS.value)
        .order_by(instance_logs.c.log_id)
        .limit(1)
    )


def dispatched_event(job: NewJob, due_at: float | None = None) -> LogEvent:
    """The dispatch guard row; a delayed node's says when it falls due."""
    return LogEvent(
        instance_id=job.instance_id,
        event_type=EventType.NODE_DISPATCHED,
        node_id=job.node_id,
        iteration=job.iteration,
        node_status="DISPATCHED",
        payload=None if due_at is None else {"dueAt": due_at},
        node_attempt=job.attempt,
    )


def completed_event(job: Job, output_variable: str | None, payload: Any) -> LogEvent:
    """The NODE_COMPLETED row of a job's attempt (``payload``: ``outcomes.completed_payload``)."""
    return LogEvent(
        job.instance_id,
        EventType.NODE_COMPLETED,
        node_id=job.node_id,
        iteration=job.iteration,
        node_status=NodeStatus.COMPLETED.value,
        output_variable=output_variable,
        payload=payload,
        node_attempt=job.attempt,
    )


def started_event(job: Job) -> LogEvent:
    """The NODE_STARTED row of a job just leased: which worker runs it and, once it was taken over
    after a lease ran out, how many times that happened."""
    return LogEvent(
        instance_id=job.instance_id,
        event_type=EventType.NODE_STARTED,
        node_id=job.node_id,
        iteration=job.iteration,
        node_status="RUNNING",
        payload=started_payload(job.lease_owner, job.takeovers),
        node_attempt=job.attempt,
    )


def started_payload(worker_id: str | None, takeovers: int) -> dict[str, Any]:
    payload: dict[str, Any] = {"workerId": worker_id}
    if takeovers:
        payload["takeovers"] = takeovers
    return payload
