"""The durable job table behind the queue transport: claim, lease, heartbeat, reschedule, delete.

``available_at`` is both the time a job becomes due and, once claimed, the end of its lease.
PostgreSQL claims with ``FOR UPDATE SKIP LOCKED`` so any number of workers can poll at once;
SQLite serialises writers anyway.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from flowdeck.domain.flow_control import DEFAULT_PRIORITY
from flowdeck.storage.database import Connection, Database
from flowdeck.storage.records import Job
from flowdeck.storage.tables import node_jobs

__all__ = ("NO_SHARE", "JobTable", "NewJob", "TenantShare", "claim_params")


@dataclass(frozen=True, slots=True)
class TenantShare:
    """A worker's fair share per tenant: at most ``cap`` running nodes of one tenant, and the order a
    tenant's due jobs are taken in (``priority_step``).

    ``running`` (job id -> tenant) is the worker's own live record of what it runs; a claim inside a
    decision adds the job it takes at once, so the next claim of the same batch counts it.
    """

    cap: int = 2**31 - 1
    running: dict[int, str] = field(default_factory=dict)
    priority_step: float = 1.0
    """Within a tenant's turn, due jobs go in aged-priority order: seconds of waiting per point of
    priority (FLOWDECK_PRIORITY_STEP_SECONDS; domain/flow_control.py ``aged_at``)."""

    def held(self) -> dict[str, int]:
        return dict(Counter(self.running.values()))

    def take(self, job: Job) -> None:
        self.running[job.id] = job.tenant_id


NO_SHARE = TenantShare()


def claim_params(now: float, owner: str, limit: int, lease_seconds: float, share: TenantShare) -> dict[str, Any]:
    return {
        "p_now": now,
        "p_limit": limit,
        "p_owner": owner,
        "p_until": now + lease_seconds,
        "p_cap": share.cap,
        "p_held": share.held(),
        "p_step": share.priority_step,
    }


async def claim_plan(
    conn: Connection, statements: Any, now: float, owner: str, limit: int, lease_seconds: float, share: TenantShare
) -> tuple[Any, dict[str, Any]] | None:
    """Which claim to run, and with what: none when nothing is due or the one waiting tenant is at its
    cap; the plain claim of its oldest jobs when one tenant alone waits with jobs of one priority (the
    common case, and cheap: ranking a 1,000-wide fan-out's due jobs on every claim made it twice as slow
    per node), the aged one when its jobs' priorities differ; the fair round-robin claim when several
    tenants wait (aged when some tenant's jobs' priorities differ). ``statements``: the dialect's
    (``claim_one_tenant``/``claim_jobs`` and their ``_aged`` variants, or PostgreSQL's that also log
    NODE_STARTED)."""
    tenants = list(await conn.execute(statements.due_tenants, {"p_now": now}))
    if not tenants:
        return None
    params = claim_params(now, owner, limit, lease_seconds, share)
    mixed = any(lowest != highest for _, lowest, highest in tenants)
    if len(tenants) > 1:
        return statements.claim_jobs_aged if mixed else statements.claim_jobs, params
    tenant = tenants[0][0]
    room = min(limit, share.cap - share.held().get(tenant, 0))
    if room <= 0:
        return None
    one = statements.claim_one_tenant_aged if mixed else statements.claim_one_tenant
    return one, {**params, "p_limit": room, "p_tenant": tenant}


@dataclass(frozen=True, slots=True)
class NewJob:
    instance_id: str
    node_id: str
    iteration: str = ""
    attempt: int = 1
    retry_base: int = 1
    delay_seconds: float = 0.0
    lease_owner: str | None = None
    """Set when the dispatching worker runs the job itself right away (no claim round trip)."""
    lease_seconds: float = 0.0
    tenant_id: str = ""
    priority: int = DEFAULT_PRIORITY
    """The run's priority (storage/flow.py ``run_priority``)."""


class JobTable:
    def __init__(self, conn: Connection, db: Database, now: float) -> None:
        self.conn = conn
        self.db = db
        self.now = now

    async def add(self, jobs: Sequence[NewJob]) -> list[Job]:
        """Insert jobs; a node that already has a job in that iteration is not queued twice."""
        if not jobs:
            return []
        rows = [
            {
                "instance_id": j.instance_id,
                "node_id": j.node_id,
                "iteration": j.iteration,
                "attempt": j.attempt,
                "retry_base": j.retry_base,
                "available_at": self.due_at(j),
                "lease_owner": j.lease_owner,
                "created_at": self.now,
                "tenant_id": j.tenant_id,
                "takeovers": 0,
                "priority": j.priority,
            }
            for j in jobs
        ]
        result = await self.conn.execute(self.db.sql.insert_job, rows[0] if len(rows) == 1 else rows)
        return [Job(*row) for row in result]

    def due_at(self, job: NewJob) -> float:
        """When a new job falls due; a job leased to its dispatcher is due again when the lease ends."""
        return self.now + (job.lease_seconds if job.lease_owner else job.delay_seconds)

    async def delete(self, job: Job) -> bool:
        """Remove a finished job. ``False`` when it is gone or already at another attempt (a late result)."""
        result = await self.conn.execute(self.db.sql.delete_job, _this_job(job))
        return bool(result.rowcount == 1)

    async def park(self, job: Job, until: float) -> bool:
        """Unlease a job whose node waits for something else (a child run), due at ``until`` unless woken
        earlier (``storage/children.wake_parent``). ``False`` when it is gone or at another attempt."""
        result = await self.conn.execute(self.db.sql.park_job, _this_job(job) | {"p_until": until})
        return bool(result.rowcount == 1)

    async def delete_for_instance(self, instance_id: str) -> int:
        result = await self.conn.execute(node_jobs.delete().where(node_jobs.c.instance_id == instance_id))
        return int(result.rowcount)

    async def reschedule(self, job: Job, delay_seconds: float) -> bool:
        """Queue the attempt after ``job``'s failed one, due after ``delay_seconds`` (retry backoff)."""
        params = _this_job(job) | {"p_next": job.attempt + 1, "p_due": self.now + delay_seconds}
        result = await self.conn.execute(self.db.sql.reschedule_job, params)
        return bool(result.rowcount == 1)

    async def claim(self, owner: str, limit: int, lease_seconds: float, share: TenantShare = NO_SHARE) -> list[Job]:
        """Lease up to ``limit`` due jobs, round-robin across tenants within ``share`` (statements._claim_jobs)."""
        plan = await claim_plan(self.conn, self.db.sql, self.now, owner, limit, lease_seconds, share)
        if plan is None:
            return []
        statement, params = plan
        return [Job(*row) for row in await self.conn.execute(statement, params)]

    async def extend(self, owner: str, job_ids: Sequence[int], lease_seconds: float) -> set[int]:
        params = {"p_ids": list(job_ids), "p_owner": owner, "p_until": self.now + lease_seconds}
        return {row[0] for row in await self.conn.execute(self.db.sql.extend_leases, params)}

    async def release(self, owner: str, job: Job | None = None) -> None:
        """Give back every lease of ``owner`` at once (a clean shutdown), or only ``job``'s at its attempt (a
        node whose result could not reach the database): the jobs are due now.

        Whoever claims one next starts its next attempt (with its own NODE_STARTED row): the attempt
        handed back was started here. As with a takeover, ``retry_base`` moves with it (no retry is
        spent); ``takeovers`` counts a shutdown's, not a single job's (its worker is alive: the database
        was away, which is no reason to fail the node once ``maxAttempts`` such hand-backs are reached).
        """
        j = node_jobs.c
        held = j.lease_owner == owner
        if job is not None:
            held = held & (j.id == job.id) & (j.attempt == job.attempt)
        await self.conn.execute(
            node_jobs.update()
            .where(held)
            .values(
                lease_owner=None,
                available_at=self.now,
                attempt=j.attempt + 1,
                retry_base=j.retry_base + 1,
                takeovers=j.takeovers + (1 if job is None else 0),
            )
        )


def _this_job(job: Job) -> dict[str, Any]:
    """The parameters of ``statements._this_job``: the job's id and attempt, and its node."""
    return {
        "p_id": job.id,
        "p_attempt": job.attempt,
        "p_instance": job.instance_id,
        "p_node": job.node_id,
        "p_scope": job.iteration,
    }
