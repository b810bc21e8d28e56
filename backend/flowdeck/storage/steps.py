"""The single-statement decisions of the state store: what each is given and what it reports.

The portable store offers none (``None``); PostgreSQL's takes them in one statement each
(storage/state_postgres.py). One input object per call.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

from flowdeck.domain.statuses import RunStatus
from flowdeck.storage.records import Job

__all__ = (
    "ChainStep",
    "ChainStepInput",
    "EndStep",
    "EndStepInput",
    "IterationStepInput",
    "LatestVersionChangedError",
    "RunStart",
)


@dataclass(frozen=True, slots=True)
class NodeResult:
    """A node attempt's successful result as the run's decision records it."""

    job: Job
    expected_version: int
    """The instance version the deciding process saw last (the compare-and-swap expects it)."""
    output_variable: str
    payload: Any
    """The NODE_COMPLETED row's payload."""
    charge: int
    """The bytes it adds to the run's stored output (engine/run_budget.py)."""
    budget: int
    """FLOWDECK_MAX_RUN_BYTES: no step is taken that would take the run's counter past it."""

    def params(self, now: float) -> dict[str, Any]:
        """The bind parameters every one-statement result step shares (storage/statements_postgres.py)."""
        job = self.job
        return {
            "p_instance_id": job.instance_id,
            "p_expected": self.expected_version,
            "p_next": self.expected_version + 1,
            "p_now": now,
            "p_node_id": job.node_id,
            "p_output_variable": self.output_variable,
            "p_payload": self.payload,
            "p_attempt": job.attempt,
            "p_job": job.id,
            "p_tenant_id": job.tenant_id,
            "p_priority": job.priority,
            "p_charge": self.charge,
            "p_budget": self.budget,
        }


@dataclass(frozen=True, slots=True)
class ChainStepInput(NodeResult):
    successor: str
    owner: str
    lease_seconds: float


@dataclass(frozen=True, slots=True)
class IterationStepInput(NodeResult):
    loop_id: str
    body: tuple[str, ...]
    entry: str
    concurrency: int
    owner: str
    lease_seconds: float


@dataclass(frozen=True, slots=True)
class EndStepInput(NodeResult):
    end_output: Any


@dataclass(frozen=True, slots=True)
class RunStart:
    """A production run to create with its start node queued, or leased to ``owner``."""

    instance_id: str
    tenant_id: str
    workflow_id: str | None
    workflow_version: int | None
    trigger: str
    run_input: Any
    timeout_seconds: float
    start_id: str
    deadline_at: float | None = None
    """``deadlineAt``: the run fails at the earlier of it and its timeout (recorded in its RUN_STATUS row)."""
    requested_by: str | None = None
    """The user who started it (``instances.requested_by``)."""
    owner: str | None = None
    """The worker its start node is leased to, for ``lease_seconds``, with its NODE_STARTED row
    (``Orchestrator.start_taker``); ``None``: the start node's job is due now, for any worker to claim."""
    lease_seconds: float = 0.0
    check_latest: bool = False
    """``workflow_version`` was not read just now: start only if it is still the workflow's latest
    (``LatestVersionChangedError`` otherwise, nothing written)."""


class LatestVersionChangedError(Exception):
    """A start that checked its workflow's latest version found another (a save or a delete came in between)."""


@dataclass(frozen=True, slots=True)
class ChainStep:
    """What a one-statement chain or iteration step did."""

    now: float
    status: RunStatus | None
    """The run's status, or ``None`` when nothing was written (the compare-and-swap failed, the
    result was logged before, it would go past the run's output budget, or the case was not one the
    statement takes)."""
    logged: bool
    """The NODE_COMPLETED row is new (``False``: a duplicate delivery)."""
    job_removed: bool
    next_job: Job | None
    """The successor's job, leased to the worker, when it was dispatched."""
    committed: asyncio.Future[None] | None = None
    """When the step is durable (it commits asynchronously: early release, storage/pg_durability.py)."""


@dataclass(frozen=True, slots=True)
class EndStep:
    """What a one-statement end step did."""

    now: float
    status: RunStatus | None
    """The run's status before it, or ``None`` when nothing was written."""
    run_completed: bool
    output: Any
    """The run output, when it completed."""
    logged: bool
    job_removed: bool
