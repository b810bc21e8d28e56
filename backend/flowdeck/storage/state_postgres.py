"""The state store on PostgreSQL: the portable one, with decisions and write pairs as single statements.

Each override writes exactly the rows of the portable method it replaces, in one round trip
(storage/statements_postgres.py); tests/integration/test_one_statement_equivalence.py runs every
topology with and without them and compares. ``Database(url, one_statement=False)`` turns them off.
"""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import Callable, Mapping
from types import SimpleNamespace
from typing import Any

import asyncpg  # type: ignore[import-untyped]
import sqlalchemy as sa

from flowdeck.domain.scopes import nested_pattern, parent_scope
from flowdeck.domain.statuses import TERMINAL_RUN_STATUSES, RunStatus
from flowdeck.storage.chain_batches import PostgresChainSteps
from flowdeck.storage.database import Database
from flowdeck.storage.disconnects import DatabaseUnavailableError, is_disconnect
from flowdeck.storage.jobs import NO_SHARE, NewJob, TenantShare, claim_plan
from flowdeck.storage.log_rows import input_payload, run_status_payload
from flowdeck.storage.records import Job, LogEvent
from flowdeck.storage.state import StateManager, StateTransaction
from flowdeck.storage.statements import JOB_COLUMNS
from flowdeck.storage.statements_postgres import postgres_statements
from flowdeck.storage.step_batches import ChainStepBatcher
from flowdeck.storage.steps import (
    ChainStep,
    ChainStepInput,
    EndStep,
    EndStepInput,
    IterationStepInput,
    LatestVersionChangedError,
    RunStart,
)
from flowdeck.storage.tables import node_jobs

__all__ = ("PostgresStateManager", "PostgresStateTransaction")

"""A run's start statement that lost its connection runs again (its new run's id keeps it from starting twice)."""


class PostgresStateTransaction(StateTransaction):
    async def record_result(self, event: LogEvent, job: Job) -> tuple[bool, bool]:
        params = {f"p_{name}": value for name, value in self._log_values(event).items()}
        params["p_job"], params["p_job_attempt"] = job.id, job.attempt  # PostgreSQL never gives an id twice
        log_id, deleted = (await self.conn.execute(postgres_statements().record_result, params)).one()
        return log_id is not None, deleted is not None

    async def dispatch_one(self, job: NewJob) -> Job | None:
        due = self._due(job)
        params = {
            "p_instance_id": job.instance_id,
            "p_node_id": job.node_id,
            "p_iteration": job.iteration,
            "p_attempt": job.attempt,
            "p_retry_base": job.retry_base,
            "p_available_at": self.jobs.due_at(job),
            "p_lease_owner": job.lease_owner,
            "p_tenant_id": job.tenant_id,
            "p_priority": job.priority,
            "p_now": self.now,
            "p_payload": None if due is None else {"dueAt": due},
        }
        row = (await self.conn.execute(postgres_statements().dispatch_one, params)).first()
        return None if row is None else Job(*row)

    async def claim_and_start(
        self, owner: str, limit: int, lease_seconds: float, share: TenantShare = NO_SHARE
    ) -> list[Job]:
        return await _claim_and_start(self.conn, self.db, self.now, owner, limit, lease_seconds, share)

    async def set_run_status(
        self,
        instance_id: str,
        status: RunStatus,
        *,
        output: Any = None,
        error: str | None = None,
        reason: str | None = None,
        deadline_at: float | None = None,
        extra: Mapping[str, Any] | None = None,
    ) -> bool:
        if status not in TERMINAL_RUN_STATUSES or extra:
            return await super().set_run_status(
                instance_id, status, output=output, reason=reason, error=error, deadline_at=deadline_at, extra=extra
            )
        params = {
            "p_id": instance_id,
            "p_status": status.value,
            "p_now": self.now,
            "p_error": error,
            "p_output": output,
            "p_payload": run_status_payload(status, reason),
        }
        return bool((await self.conn.execute(postgres_statements().finish_run_logged, params)).scalar_one())


class PostgresStateManager(StateManager):
    transaction_class = PostgresStateTransaction
    takes_steps = True
    starts_in_one_statement = True

    def __init__(self, db: Database, clock: Callable[[], float] = time.time) -> None:
        super().__init__(db, clock)
        self.chain_batches = ChainStepBatcher(PostgresChainSteps(db, clock).send)

    async def close(self) -> None:
        await self.chain_batches.close()

    async def claim_jobs(
        self, owner: str, limit: int, lease_seconds: float, share: TenantShare = NO_SHARE
    ) -> list[Job]:
        """The worker's claim without BEGIN and COMMIT (two round trips fewer): the claim is one statement
        that logs its NODE_STARTED rows itself, and the read before it (which tenants wait) sees nothing
        more inside a transaction than outside one at PostgreSQL's READ COMMITTED (each statement takes
        its own snapshot either way)."""
        async with self.db.autocommit() as conn:
            return await _claim_and_start(conn, self.db, self.clock(), owner, limit, lease_seconds, share)

    async def chain_step(self, step: ChainStepInput) -> ChainStep:
        """With the chain steps of other runs ready at the same moment, in one statement (storage/chain_batches.py)."""
        return await self.chain_batches.submit(step)

    async def iteration_step(self, step: IterationStepInput) -> ChainStep:
        """See ``statements_postgres._iteration_step``."""
        now = self.clock()
        scope = step.job.iteration
        params = {
            **step.params(now),
            "p_iteration": scope,
            "p_nested": nested_pattern(scope),
            "p_parent": parent_scope(scope),
            "p_loop_id": step.loop_id,
            "p_body": list(step.body),
            "p_entry": step.entry,
            "p_concurrency": step.concurrency,
            "p_lease_until": now + step.lease_seconds,
            "p_owner": step.owner,
        }
        async with self.db.autocommit(early_release=True) as conn:
            row = (await conn.execute(postgres_statements().iteration_step, params)).first()
        if row is None:
            return ChainStep(now, None, False, False, None)
        status, log_id, *job_columns = row
        next_job = None if job_columns[0] is None else Job(*job_columns)
        return ChainStep(now, RunStatus(status), log_id is not None, log_id is not None, next_job, conn.committed)

    async def end_step(self, step: EndStepInput) -> EndStep:
        """See ``statements_postgres._end_step``."""
        now = self.clock()
        end_output = step.end_output
        params = {
            **step.params(now),
            "p_end_output": end_output if isinstance(end_output, dict) else {},
            "p_status_payload": run_status_payload(RunStatus.COMPLETED, None),
        }
        async with self.db.autocommit() as conn:
            row = (await conn.execute(postgres_statements().end_step, params)).first()
        if row is None:
            return EndStep(now, None, False, None, False, False)
        before, finished, output, log_id, removed = row
        return EndStep(now, RunStatus(before), bool(finished), output, log_id is not None, removed is not None)

    async def start_production_run(self, start: RunStart) -> tuple[float, Job | None]:
        """See ``statements_postgres._start_run``: the time it was stamped with, and the start node's job
        when it was leased to ``start.owner``."""
        now = self.clock()
        params = {
            "p_id": start.instance_id,
            "p_tenant_id": start.tenant_id,
            "p_workflow_id": start.workflow_id,
            "p_workflow_version": start.workflow_version,
            "p_trigger": start.trigger,
            "p_input": start.run_input,
            "p_input_payload": input_payload(start.run_input),
            "p_status_payload": {
                **run_status_payload(RunStatus.RUNNING, None),
                **({} if start.deadline_at is None else {"deadlineAt": start.deadline_at}),
            },
            "p_now": now,
            "p_deadline": min(
                now + start.timeout_seconds, math.inf if start.deadline_at is None else start.deadline_at
            ),
            "p_start_id": start.start_id,
            "p_requested_by": start.requested_by,
            "p_check_latest": start.check_latest,
            "p_owner": start.owner,
            "p_available_at": now if start.owner is None else now + start.lease_seconds,
        }
        give_up = time.monotonic() + self.db.reconnect_seconds
        attempt = 0
        while True:
            try:
                async with self.db.autocommit() as conn:
                    row = (await conn.execute(postgres_statements().start_run, params)).first()
            except Exception as exc:
                if attempt and any(
                    isinstance(e, sa.exc.IntegrityError | asyncpg.UniqueViolationError) for e in (exc, exc.__cause__)
                ):
                    # the attempt that lost its connection had committed: the run's id is taken by it
                    return now, await self._leased_start(start)
                if not is_disconnect(exc):
                    raise
                if time.monotonic() >= give_up:  # the API answers 503, naming the run that may have started
                    raise DatabaseUnavailableError(
                        f"PostgreSQL kept closing the connection for FLOWDECK_DB_RECONNECT_SECONDS"
                        f" ({self.db.reconnect_seconds:g} s) while run {start.instance_id} was starting:"
                        " it may or may not have started"
                    ) from exc
                attempt += 1  # PostgreSQL closed the connection mid-statement: it may have committed (see above)
                if attempt > 1:  # closed again: a pause before the next (a restart under way)
                    await asyncio.sleep(min(0.02 * 2**attempt, 0.5))
                continue
            if row is None:
                raise LatestVersionChangedError(
                    f"workflow {start.workflow_id} is no longer at version {start.workflow_version}"
                )
            return now, None if start.owner is None else Job(*row)

    async def _leased_start(self, start: RunStart) -> Job | None:
        """The start node's job leased to ``start.owner`` by a start whose answer was lost."""
        if start.owner is None:
            return None
        j = node_jobs.c
        leased = (j.instance_id == start.instance_id) & (j.node_id == start.start_id) & (j.iteration == "")
        query = sa.select(*JOB_COLUMNS).where(leased, j.lease_owner == start.owner)
        async with self.db.read(snapshot=False) as conn:
            row = (await conn.execute(query)).first()
        return None if row is None else Job(*row)


async def _claim_and_start(
    conn: Any, db: Database, now: float, owner: str, limit: int, lease_seconds: float, share: TenantShare
) -> list[Job]:
    """Lease due jobs and log their NODE_STARTED rows in one statement (``jobs.claim_plan`` picks which)."""
    one = postgres_statements()
    statements = SimpleNamespace(
        due_tenants=db.sql.due_tenants,
        claim_jobs=one.claim_and_start,
        claim_jobs_aged=one.claim_aged_and_start,
        claim_one_tenant=one.claim_one_and_start,
        claim_one_tenant_aged=one.claim_one_aged_and_start,
    )
    plan = await claim_plan(conn, statements, now, owner, limit, lease_seconds, share)
    if plan is None:
        return []
    statement, params = plan
    return [Job(*row) for row in await conn.execute(statement, params)]
