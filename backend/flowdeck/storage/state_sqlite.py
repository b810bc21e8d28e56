"""The state store on SQLite: the portable one, with a chain's step taken without the general decision.

SQLite has no data-modifying CTEs, so its chain step is not one statement as PostgreSQL's is
(storage/chain_batches.py) but one write transaction of the portable statements in a fixed order:
the compare-and-swap that also charges the run's output budget and refuses a result logged before,
then the NODE_COMPLETED row and the job's removal (``StateTransaction.record_result``), then the
successor dispatched and leased to the worker (``StateTransaction.dispatch_one``). It writes what the
general decision writes for such a node (engine/decision.py: ``record_completion``, ``advance``,
``dispatch``), with one statement and the decision's Python less: on SQLite every decision holds the
database's one write lock while it runs, so what a decision costs is what all processes together can
decide in a second (docs/benchmarks.md). tests/integration/test_generated_equivalence.py compares what
it writes with the general decision's.

The steps of different runs that are ready while the write lock is taken go together in one write
transaction (storage/step_batches.py, as PostgreSQL's go in one statement): their statements run back to
back, where steps taken one by one would each wait for the lock's hand-over between this process's
tasks while the group holds the file's write lock. A step that fails rolls back the whole batch's
transaction and every step of it raises, as a failed statement does on PostgreSQL.

``Database(url, one_statement=False)`` turns it off, as it does PostgreSQL's statements.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from typing import Final

import sqlalchemy as sa

from flowdeck.domain.statuses import EventType, RunStatus
from flowdeck.storage.compiled import compile_statement
from flowdeck.storage.database import Database
from flowdeck.storage.jobs import NewJob
from flowdeck.storage.log_rows import completed_event
from flowdeck.storage.run_bytes import ADD_CHARGE, CHARGE_FITS
from flowdeck.storage.state import StateManager, StateTransaction
from flowdeck.storage.step_batches import ChainStepBatcher
from flowdeck.storage.steps import ChainStep, ChainStepInput

__all__ = ("SqliteStateManager",)

_RUNNING_SWAP: Final = compile_statement(
    sa.text(
        f"""
UPDATE instances SET version = :p_next, {ADD_CHARGE}, updated_at = :p_now
WHERE id = :p_instance_id AND version = :p_expected AND status = '{RunStatus.RUNNING.value}' AND {CHARGE_FITS}
    AND NOT EXISTS (
        SELECT 1 FROM instance_logs
        WHERE instance_id = :p_instance_id AND node_id = :p_node_id AND iteration = :p_iteration
            AND event_type = '{EventType.NODE_COMPLETED.value}' AND node_attempt = :p_attempt
    )
"""
    ),
    is_sqlite=True,
    returns_rows=False,
)
"""The step's compare-and-swap, for a RUNNING run only (a late result of an ended run is the general
decision's), charging the result's bytes if they fit and only if the attempt's result is not logged yet
(a duplicate delivery: the general decision sees it). No RETURNING: the row count says all, and
RETURNING costs SQLite more than the update."""


class SqliteStateManager(StateManager):
    takes_steps = True

    def __init__(self, db: Database, clock: Callable[[], float] = time.time) -> None:
        super().__init__(db, clock)
        self.chain_batches = ChainStepBatcher(self._send)

    async def close(self) -> None:
        await self.chain_batches.close()

    async def chain_step(self, step: ChainStepInput) -> ChainStep:
        """With the chain steps of other runs ready at the same moment, in one write transaction."""
        return await self.chain_batches.submit(step)

    async def _send(self, steps: list[ChainStepInput]) -> list[ChainStep]:
        """The batch's steps one after the other in one transaction, early-released (storage/database.py): their
        statements run back to back, with no other task of this process between them holding the write lock."""
        async with self.transaction(defer=True) as tx:
            taken = [await _chain_step(tx, step) for step in steps]
        return [dataclasses.replace(step, committed=tx.committed) if step.status else step for step in taken]


async def _chain_step(tx: StateTransaction, step: ChainStepInput) -> ChainStep:
    job = step.job
    params = {**step.params(tx.now), "p_iteration": job.iteration}  # the parameters PostgreSQL's steps share
    if not (await tx.conn.execute(_RUNNING_SWAP, params)).rowcount:
        return ChainStep(tx.now, None, logged=False, job_removed=False, next_job=None)
    logged, removed = await tx.record_result(completed_event(job, step.output_variable, step.payload), job)
    next_job = None
    if removed:
        successor = NewJob(
            job.instance_id,
            step.successor,
            job.iteration,
            lease_owner=step.owner,
            lease_seconds=step.lease_seconds,
            tenant_id=job.tenant_id,
            priority=job.priority,
        )
        next_job = await tx.dispatch_one(successor)
    return ChainStep(tx.now, RunStatus.RUNNING, logged, removed, next_job)
