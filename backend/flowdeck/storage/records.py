"""Plain records the state manager hands out: rows of instances, the log and the job queue."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from flowdeck.domain.statuses import EventType, RunStatus

__all__ = ("InstanceRecord", "Job", "LogEvent", "LogRow")


@dataclass(frozen=True, slots=True)
class InstanceRecord:
    id: str
    tenant_id: str
    workflow_id: str | None
    workflow_version: int | None
    is_test: bool
    status: RunStatus
    version: int
    trigger: str
    input: Any
    output: Any
    error: str | None
    created_at: float
    started_at: float | None
    completed_at: float | None
    updated_at: float
    deadline_at: float | None
    sla_breached_at: float | None = None
    parent_instance_id: str | None = None
    """The run whose ``workflow`` node started this one (sub-workflows), if any."""
    parent_node_id: str | None = None
    parent_iteration: str | None = None
    parent_attempt: int | None = None
    depth: int = 0
    """0 for a run nothing called; its parent's + 1 otherwise."""


@dataclass(frozen=True, slots=True)
class LogEvent:
    """A row to append to the log. ``node_attempt`` is 0 for rows that belong to no attempt."""

    instance_id: str
    event_type: EventType
    node_id: str | None = None
    iteration: str = ""
    node_status: str | None = None
    output_variable: str | None = None
    payload: Any = None
    error_message: str | None = None
    node_attempt: int = 0


@dataclass(frozen=True, slots=True)
class LogRow:
    log_id: int
    instance_id: str
    node_id: str | None
    iteration: str
    event_type: str
    node_status: str | None
    output_variable: str | None
    payload: Any
    error_message: str | None
    node_attempt: int
    created_at: float


@dataclass(frozen=True, slots=True)
class Job:
    """A durable node job. ``retry_base`` is the attempt number this dispatch started at (partial retry)."""

    id: int
    instance_id: str
    node_id: str
    iteration: str
    attempt: int
    retry_base: int = 1
    available_at: float = 0.0
    tenant_id: str = ""
    """The run's tenant (claims are fair between tenants; a chain's next job keeps it)."""
    lease_owner: str | None = None
    """The worker holding the lease, once claimed."""
    takeovers: int = 0
    """How many times another worker took this job over after a lease expired."""
    priority: int = 50
    """The run's priority (1-100): claims take a tenant's due jobs in aged-priority order."""
    run_version: int | None = field(default=None, compare=False)
    """The run's instance version when this job was claimed (``None`` unless it was): a process that did
    not take the run's last decision can offer the node's result to a one-statement step at once."""
