"""The state manager: the one place every read and write of run state goes through (seed 001).

Writes that make up one scheduling decision must commit together, so they live on
``StateTransaction``, which wraps one database transaction; ``StateManager`` opens those and also
offers the reads. The log is append-only: nothing here updates or deletes a log row, except
``delete_test_instance``, which removes a test run wholesale.
"""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import AsyncIterator, Callable, Iterable, Mapping, Sequence
from contextlib import asynccontextmanager
from operator import itemgetter
from typing import Any

import sqlalchemy as sa

from flowdeck.domain.scopes import nested_pattern, visible_scopes
from flowdeck.domain.statuses import TERMINAL_RUN_STATUSES, EventType, RunStatus
from flowdeck.storage.children import ParentRef, wake_parent
from flowdeck.storage.database import Connection, Database
from flowdeck.storage.held_counters import HeldCounters
from flowdeck.storage.jobs import NO_SHARE, JobTable, NewJob, TenantShare
from flowdeck.storage.json_codec import json_dumps, json_loads
from flowdeck.storage.log_fold import fold_context, merged_end_outputs, superseded
from flowdeck.storage.log_rows import (
    dispatched_event,
    first_status_payload,
    log_page,
    run_status_payload,
    started_event,
)
from flowdeck.storage.records import InstanceRecord, Job, LogEvent, LogRow
from flowdeck.storage.schema import RUN_OWNED_TABLES
from flowdeck.storage.statements import LOG_COLUMNS, in_run_context
from flowdeck.storage.steps import ChainStep, ChainStepInput, EndStep, EndStepInput, IterationStepInput, RunStart
from flowdeck.storage.tables import instance_logs, instances, loop_states, node_jobs

__all__ = ("DEFINITION_KEY", "PINNED_KEY", "StateManager", "StateTransaction", "fold_context", "run_context")

DEFINITION_KEY = "__workflowDefinition"
PINNED_KEY = "__pinned"


def run_context(events: Iterable[LogEvent]) -> dict[str, Any]:
    """The context of a run's start node from the rows its first transaction logs, as ``assemble_context`` would
    fold them read back (their payloads through the log's JSON codec: a tuple comes back a list)."""
    rows = [e for e in events if in_run_context(e, DEFINITION_KEY)]
    return fold_context((e.event_type, e.node_id, e.output_variable, json_loads(json_dumps(e.payload))) for e in rows)


class StateTransaction:
    """The writes (and the reads a decision needs) inside one database transaction."""

    def __init__(self, conn: Connection, db: Database, now: float) -> None:
        self.conn = conn
        self.db = db
        self.now = now
        self.jobs = JobTable(conn, db, now)
        self.held = HeldCounters(conn, db)
        """The counters of the runs this transaction has locked, written as it ends."""

    @property
    def committed(self) -> asyncio.Future[None] | None:
        """After an early-released block (``transaction(defer=True)``): the commit its writes wait for;
        ``None`` when they were durable as the block ended."""
        return self.conn.committed

    # -- the log ---------------------------------------------------------------------------------
    def _log_values(self, event: LogEvent) -> dict[str, Any]:
        return {
            "instance_id": event.instance_id,
            "node_id": event.node_id,
            "iteration": event.iteration,
            "event_type": event.event_type.value,
            "node_status": event.node_status,
            "output_variable": event.output_variable,
            "payload": event.payload,
            "error_message": event.error_message,
            "node_attempt": event.node_attempt,
            "created_at": self.now,
        }

    async def log_event(self, event: LogEvent) -> int | None:
        """Append one row; ``None`` when an identical node event is already logged (a duplicate delivery)."""
        result = await self.conn.execute(self.db.sql.insert_log, self._log_values(event))
        return result.scalar_one_or_none()  # type: ignore[no-any-return]

    async def log_event_bulk(self, events: Sequence[LogEvent]) -> list[str | None]:
        """Append many rows in one round trip; duplicates are skipped. Returns the node ids of the new rows."""
        if not events:
            return []
        params = [self._log_values(e) for e in events]
        result = await self.conn.execute(
            self.db.sql.insert_log_returning_node, params[0] if len(params) == 1 else params
        )
        return [row[0] for row in result]

    async def record_result(self, event: LogEvent, job: Job) -> tuple[bool, bool]:
        """Log a node attempt's result and remove its job, which goes only if the row is new.

        Returns (the row is new, the job was there at that attempt). ``(False, False)`` is a duplicate
        delivery.
        """
        if await self.log_event(event) is None:
            return False, False
        return True, await self.jobs.delete(job)

    async def dispatch_one(self, job: NewJob) -> Job | None:
        """Dispatch one node: its NODE_DISPATCHED row (the guard: never the same node twice), its job,
        and NODE_STARTED when the job is leased to its dispatcher. ``None`` when it was dispatched before.
        """
        if not await self.log_event_bulk([dispatched_event(job, self._due(job))]):
            return None
        added = await self.jobs.add([job])
        if added and job.lease_owner:
            await self.log_event(started_event(added[0]))
        return added[0] if added else None

    def _due(self, job: NewJob) -> float | None:
        """When a delayed job falls due (its NODE_DISPATCHED row says so); ``None`` for others."""
        return self.jobs.due_at(job) if job.delay_seconds and not job.lease_owner else None

    async def claim_and_start(
        self, owner: str, limit: int, lease_seconds: float, share: TenantShare = NO_SHARE
    ) -> list[Job]:
        """Lease up to ``limit`` due jobs to ``owner`` (fairly across tenants) and log their NODE_STARTED rows."""
        jobs = sorted(await self.jobs.claim(owner, limit, lease_seconds, share), key=lambda job: job.id)
        if jobs:
            await self.log_event_bulk([started_event(job) for job in jobs])
        return jobs

    # -- the instance ----------------------------------------------------------------------------
    async def create_instance(
        self,
        *,
        instance_id: str,
        tenant_id: str,
        workflow_id: str | None,
        workflow_version: int | None,
        is_test: bool,
        trigger: str,
        run_input: Any,
        timeout_seconds: float,
        available_at: float | None = None,
        deadline_at: float | None = None,
        parent: ParentRef | None = None,
        depth: int = 0,
        root_instance_id: str | None = None,
        requested_by: str | None = None,
        queued: bool = False,
    ) -> None:
        """A RUNNING run, or a PENDING one until ``available_at`` (then ``started_at`` says when it starts), or
        ``queued`` by flow control (PENDING until admitted: no start time, no timeout before it begins).

        ``parent``: the ``workflow`` node attempt calling it (a sub-workflow), ``depth`` its nesting,
        ``root_instance_id`` its outermost caller (storage/children.py ``count_tree_run``)."""
        begin: float | None = self.now if available_at is None else available_at
        deadline = min((begin or 0.0) + timeout_seconds, deadline_at if deadline_at is not None else math.inf)
        if queued:
            begin, deadline = None, deadline_at  # type: ignore[assignment]  # NULL: no timeout before it begins
        values = {
            "id": instance_id,
            "tenant_id": tenant_id,
            "workflow_id": workflow_id,
            "workflow_version": workflow_version,
            "is_test": is_test,
            "status": (RunStatus.RUNNING if available_at is None and not queued else RunStatus.PENDING).value,
            "version": 1,
            "trigger": trigger,
            "input": run_input,
            "created_at": self.now,
            "started_at": begin,
            "updated_at": self.now,
            "deadline_at": deadline,
            "parent_instance_id": parent.instance_id if parent else None,
            "parent_node_id": parent.node_id if parent else None,
            "parent_iteration": parent.iteration if parent else None,
            "parent_attempt": parent.attempt if parent else None,
            "depth": depth,
            "root_instance_id": root_instance_id,
            "requested_by": requested_by,
        }
        await self.conn.execute(self.db.sql.insert_instance, values)

    async def begin_run(
        self, instance_id: str, deadline_at: float, reason: str = "scheduled start (availableAt)"
    ) -> None:
        """A scheduled or queued (PENDING) run begins: RUNNING from now, with its RUN_STATUS row."""
        await self.conn.execute(
            instances.update()
            .where(instances.c.id == instance_id)
            .values(status=RunStatus.RUNNING.value, started_at=self.now, updated_at=self.now, deadline_at=deadline_at)
        )
        await self.log_event(
            LogEvent(
                instance_id,
                EventType.RUN_STATUS,
                node_status=RunStatus.RUNNING.value,
                payload=run_status_payload(RunStatus.RUNNING, reason),
            )
        )

    async def set_workflow_version(self, instance_id: str, version: int) -> None:
        """A partial retry moves the run to another saved version (its RUN_STATUS row says which)."""
        await self.conn.execute(
            instances.update().where(instances.c.id == instance_id).values(workflow_version=version)
        )

    async def first_status_payload(self, instance_id: str) -> Any:
        """The payload of the run's first RUN_STATUS row (its scheduled start and deadline)."""
        return (await self.conn.execute(first_status_payload(instance_id))).scalar_one_or_none()

    async def read_instance_version(self, instance_id: str) -> tuple[RunStatus, int] | None:
        row = (await self.conn.execute(self.db.sql.instance_version, {"p_id": instance_id})).first()
        return None if row is None else (RunStatus(row[0]), row[1])

    async def compare_and_swap(self, instance_id: str, expected_version: int) -> RunStatus | None:
        """Claim the next version of the instance and return its status; ``None`` when the instance is
        not at ``expected_version`` (another decision got there first, or it does not exist)."""
        params = {"p_id": instance_id, "p_expected": expected_version, "p_now": self.now}
        status = (await self.conn.execute(self.db.sql.compare_and_swap, params)).scalar_one_or_none()
        return None if status is None else RunStatus(status)

    async def take_next_version(self, instance_id: str) -> tuple[RunStatus, int] | None:
        """Move the instance to its next version, whatever it is, locking it to the commit (engine/cas.py):
        its status and the version it moved from; ``None`` when it does not exist."""
        params = {"p_id": instance_id, "p_now": self.now}
        row = (await self.conn.execute(self.db.sql.take_next_version, params)).first()
        if row is None:
            return None
        self.held.hold(instance_id, row[2])
        return RunStatus(row[0]), row[1] - 1

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
        """Change the run status and log its RUN_STATUS row (``extra``: more of its payload). Call only
        after winning the CAS. ``True`` when the run ended and that woke the node that called it."""
        params = {"p_id": instance_id, "p_status": status.value, "p_now": self.now, "p_error": error}
        payload = {**run_status_payload(status, reason), **(extra or {})}
        woke = False
        if status in TERMINAL_RUN_STATUSES:
            parent = (await self.conn.execute(self.db.sql.finish_run, {**params, "p_output": output})).first()
            woke = parent is not None and await wake_parent(self.conn, tuple(parent), self.now)
        else:
            await self.conn.execute(self.db.sql.reopen_run, {**params, "p_deadline": deadline_at})
        await self.log_event(
            LogEvent(
                instance_id=instance_id,
                event_type=EventType.RUN_STATUS,
                node_status=status.value,
                payload=payload,
                error_message=error,
            )
        )
        return woke

    async def outputs_if_idle(self, instance_id: str) -> dict[str, Any] | None:
        """The run output (the end nodes' outputs merged) once the run has no job left, ``None`` while it has."""
        rows = (await self.conn.execute(self.db.sql.outputs_if_idle, {"p_id": instance_id})).all()
        if not rows:
            return None
        return merged_end_outputs(payload for _, _, payload in rows[1:])

    async def node_rows(self, instance_id: str) -> list[LogRow]:
        """Every node-level row of the run, in log order (partial retry folds them)."""
        rows = await self.conn.execute(
            sa.select(*LOG_COLUMNS)
            .where(instance_logs.c.instance_id == instance_id, instance_logs.c.node_id.is_not(None))
            .order_by(instance_logs.c.log_id)
        )
        return [LogRow(*row) for row in rows]

    # -- join barriers ---------------------------------------------------------------------------
    async def bump_barriers(
        self, instance_id: str, iteration: str, deltas: Mapping[str, tuple[int, int]]
    ) -> dict[str, tuple[int, int]]:
        """Add (resolved, taken) edge counts to each node's barrier; returns the counts after the add."""
        return await self.held.bump_barriers(instance_id, iteration, deltas) if deltas else {}

    async def charge_output(self, instance_id: str, charge: int, budget: int) -> bool:
        """Count ``charge`` bytes against the run's output budget if they fit (storage/run_bytes.py)."""
        return await self.held.charge(instance_id, charge, budget)

    async def commit_durably(self) -> None:
        """In an early-released transaction: commit now and durably (its last statement)."""
        await self.held.write()
        await self.conn.commit_durably()

    # -- loops -------------------------------------------------------------------------------------
    async def start_loop(self, instance_id: str, node_id: str, iteration: str, count: int, attempt: int) -> bool:
        """Record a loop's expansion; ``False`` if this loop already started in this scope."""
        stmt = (
            self.db.insert(loop_states)
            .values(
                instance_id=instance_id,
                node_id=node_id,
                iteration=iteration,
                item_count=count,
                finished=0,
                attempt=attempt,
            )
            .on_conflict_do_nothing()
            .returning(loop_states.c.node_id)
        )
        return (await self.conn.execute(stmt)).first() is not None

    async def finish_iteration(self, instance_id: str, node_id: str, iteration: str) -> tuple[int, int, int]:
        """Count one more finished iteration; returns (count, finished, attempt) after it."""
        params = {"p_instance": instance_id, "p_node": node_id, "p_scope": iteration}
        count, finished, attempt = (await self.conn.execute(self.db.sql.finish_iteration, params)).one()
        return int(count), int(finished), int(attempt)

    async def loop_attempt(self, instance_id: str, node_id: str, iteration: str) -> int:
        stmt = sa.select(loop_states.c.attempt).where(
            loop_states.c.instance_id == instance_id,
            loop_states.c.node_id == node_id,
            loop_states.c.iteration == iteration,
        )
        return int((await self.conn.execute(stmt)).scalar_one())

    async def loop_states(self, instance_id: str) -> dict[tuple[str, str], tuple[int, int, int]]:
        """(loop node, scope) -> (item count, finished iterations, attempt) of every loop of the run."""
        stmt = sa.select(
            loop_states.c.node_id,
            loop_states.c.iteration,
            loop_states.c.item_count,
            loop_states.c.finished,
            loop_states.c.attempt,
        ).where(loop_states.c.instance_id == instance_id)
        return {(r[0], r[1]): (int(r[2]), int(r[3]), int(r[4])) for r in await self.conn.execute(stmt)}

    async def set_loop_finished(self, instance_id: str, node_id: str, iteration: str, finished: int) -> None:
        await self.conn.execute(
            loop_states.update()
            .where(
                loop_states.c.instance_id == instance_id,
                loop_states.c.node_id == node_id,
                loop_states.c.iteration == iteration,
            )
            .values(finished=finished)
        )

    async def has_scope_jobs(self, instance_id: str, node_ids: Iterable[str], scope: str) -> bool:
        """Does any of ``node_ids`` have a job in ``scope`` or in a scope nested in it?"""
        params = {
            "p_instance": instance_id,
            "p_nodes": list(node_ids),
            "p_scope": scope,
            "p_nested": nested_pattern(scope),
        }
        return (await self.conn.execute(self.db.sql.scope_job, params)).first() is not None

    async def completed_outputs(self, instance_id: str, node_ids: Iterable[str]) -> list[tuple[str, str, Any]]:
        """(node, scope, output) of the NODE_COMPLETED rows of ``node_ids`` that count (a late result of a
        replaced attempt does not: ``log_fold.superseded``), in log order."""
        logs = instance_logs.c
        stmt = (
            sa.select(logs.node_id, logs.iteration, logs.payload, logs.node_attempt)
            .where(
                logs.instance_id == instance_id,
                logs.event_type == EventType.NODE_COMPLETED.value,
                logs.node_id.in_(list(node_ids)),
            )
            .order_by(logs.log_id)
        )
        rows = (await self.conn.execute(stmt)).all()
        stale = superseded((r[0], r[1], r[3]) for r in rows)
        return [(r[0], r[1], (r[2] or {}).get("output")) for r in rows if (r[0], r[1], r[3]) not in stale]


class StateManager:
    """The run state store, portable: what SQLite runs, and PostgreSQL with ``one_statement`` off.

    ``StateManager.create`` picks the implementation for a database, as DBOS picks its system
    database class; the engine never asks which one it has.
    """

    transaction_class: type[StateTransaction] = StateTransaction
    takes_steps = False
    """Whether ``chain_step`` and its siblings below may take a decision (engine/one_statement.py asks)."""
    starts_in_one_statement = False
    """Whether ``start_production_run`` takes a plain production run's start (and can check its version)."""

    def __init__(self, db: Database, clock: Callable[[], float] = time.time) -> None:
        self.db = db
        self.clock = clock

    @staticmethod
    def create(db: Database, clock: Callable[[], float] = time.time) -> StateManager:
        """The store for ``db``: with the steps of its dialect unless ``db.one_statement`` is off."""
        if not db.one_statement:
            return StateManager(db, clock)
        if db.is_sqlite:
            from flowdeck.storage.state_sqlite import SqliteStateManager

            return SqliteStateManager(db, clock)
        from flowdeck.storage.state_postgres import PostgresStateManager

        return PostgresStateManager(db, clock)

    async def close(self) -> None:
        """Finish what is in flight (the engine stops; the database closes after)."""

    @asynccontextmanager
    async def transaction(self, *, defer: bool = False) -> AsyncIterator[StateTransaction]:
        """A write transaction; ``defer``: early release (storage/database.py): the block returns before
        its writes are durable, and ``StateTransaction.committed`` says when they are."""
        async with self.db.transaction(defer=defer) as conn:
            tx = self.transaction_class(conn, self.db, self.clock())
            yield tx
            await tx.held.write()

    async def settle(self) -> None:
        """Wait until every early-released write is durable."""
        await self.db.settle()

    # -- single-statement decisions ----------------------------------------------------------------
    # The portable store takes none: each returns ``None`` ("not offered") and the engine decides the
    # general way. PostgresStateManager (storage/state_postgres.py) takes the common ones in one
    # statement each, SqliteStateManager (storage/state_sqlite.py) a chain's step in a few, writing the
    # same rows (tests/integration/test_one_statement_equivalence.py).

    async def chain_step(self, step: ChainStepInput) -> ChainStep | None:
        """A chain's step: the node's result and its sole successor dispatched, leased to ``owner``."""
        return None

    async def iteration_step(self, step: IterationStepInput) -> ChainStep | None:
        """The node ending a loop iteration: its result, the iteration counted, the next item started."""
        return None

    async def end_step(self, step: EndStepInput) -> EndStep | None:
        """A top-level end node's result, and the run's completion when it was the last."""
        return None

    async def start_production_run(self, start: RunStart) -> tuple[float, Job | None] | None:
        """A production run with its start node queued (or leased to ``start.owner``) in one statement: the
        time it was stamped with and the leased job; ``None``: not taken (the general start writes it)."""
        return None

    # -- reads -----------------------------------------------------------------------------------
    async def get_instance(self, instance_id: str) -> InstanceRecord | None:
        async with self.db.read(snapshot=False) as conn:
            row = (await conn.execute(self.db.sql.get_instance, {"p_id": instance_id})).first()
        if row is None:
            return None
        run_id, tenant_id, workflow_id, workflow_version, is_test, status, *rest = row  # INSTANCE_RECORD_COLUMNS
        return InstanceRecord(run_id, tenant_id, workflow_id, workflow_version, bool(is_test), RunStatus(status), *rest)

    async def assemble_context(
        self, instance_id: str, node_ids: Iterable[str], iteration: str = "", *, before_log_id: int | None = None
    ) -> dict[str, Any]:
        """Fold INPUT_SET, SYSTEM_SET and the NODE_COMPLETED rows of ``node_ids`` in log order.

        The engine passes a node's ancestors: a node sees the outputs upstream of it, never a
        sibling's (which would depend on timing). The stored test-run definition is left out.
        ``before_log_id``: only the rows logged before it (the context an attempt started with).
        """
        scopes, nodes = visible_scopes(iteration), list(node_ids)
        params = {"p_id": instance_id, "p_scopes": scopes, "p_nodes": nodes, "p_hidden": DEFINITION_KEY}
        async with self.db.read(snapshot=False) as conn:
            rows = sorted(map(tuple, await conn.execute(self.db.sql.context_rows, params)), key=itemgetter(0))
        if before_log_id is not None:
            rows = [row for row in rows if row[0] < before_log_id]
        completed = EventType.NODE_COMPLETED.value
        stale = superseded((r[2], r[5], r[6]) for r in rows if r[1] == completed)
        return fold_context(r[1:5] for r in rows if r[1] != completed or (r[2], r[5], r[6]) not in stale)

    async def load_test_definition(self, instance_id: str) -> dict[str, Any] | None:
        """The SYSTEM_SET payload a test run was started with (its graph and pins), or ``None``."""
        stmt = (
            sa.select(instance_logs.c.payload)
            .where(
                instance_logs.c.instance_id == instance_id,
                instance_logs.c.event_type == EventType.SYSTEM_SET.value,
                instance_logs.c.output_variable == DEFINITION_KEY,
            )
            .order_by(instance_logs.c.log_id)
            .limit(1)
        )  # written at the start: the log-order index finds it first
        async with self.db.read() as conn:
            payload = (await conn.execute(stmt)).scalar_one_or_none()
        return payload if isinstance(payload, dict) else None

    async def read_log(self, instance_id: str, *, after_log_id: int = 0, limit: int | None = None) -> list[LogRow]:
        async with self.db.read() as conn:
            return [LogRow(*row) for row in await conn.execute(log_page(instance_id, after_log_id, limit))]

    async def get_timed_out_instances(self, now: float, limit: int = 100) -> list[str]:
        stmt = (
            sa.select(instances.c.id)
            .where(
                instances.c.status.in_([RunStatus.RUNNING.value, RunStatus.PENDING.value]),
                instances.c.deadline_at < now,
            )
            .limit(limit)
        )
        async with self.db.read() as conn:
            return [row[0] for row in await conn.execute(stmt)]

    async def get_stale_running_instances(self, older_than: float, limit: int = 100) -> list[str]:
        """RUNNING runs with no job left and no change since ``older_than``: nothing can move them on."""
        has_job = sa.exists().where(node_jobs.c.instance_id == instances.c.id)
        stmt = (
            sa.select(instances.c.id)
            .where(
                instances.c.status == RunStatus.RUNNING.value,
                instances.c.updated_at < older_than,
                ~has_job,
            )
            .limit(limit)
        )
        async with self.db.read() as conn:
            return [row[0] for row in await conn.execute(stmt)]

    async def first_status_payload(self, instance_id: str) -> Any:
        async with self.db.read() as conn:
            return (await conn.execute(first_status_payload(instance_id))).scalar_one_or_none()

    async def count_jobs(self, instance_id: str) -> int:
        stmt = sa.select(sa.func.count()).select_from(node_jobs).where(node_jobs.c.instance_id == instance_id)
        async with self.db.read() as conn:
            return int((await conn.execute(stmt)).scalar_one())

    async def delete_test_instance(self, instance_id: str) -> bool:
        """Remove a test run and every row of it in one transaction. ``False`` if it is not a test run."""
        async with self.transaction() as tx:
            conn = tx.conn
            is_test = (
                await conn.execute(sa.select(instances.c.is_test).where(instances.c.id == instance_id))
            ).scalar_one_or_none()
            if not is_test:
                return False
            for table in RUN_OWNED_TABLES:
                await conn.execute(table.delete().where(table.c.instance_id == instance_id))
            await conn.execute(instances.delete().where(instances.c.id == instance_id))
            return True

    # -- the job queue ---------------------------------------------------------------------------
    async def claim_jobs(
        self, owner: str, limit: int, lease_seconds: float, share: TenantShare = NO_SHARE
    ) -> list[Job]:
        """Lease up to ``limit`` due jobs to ``owner`` and log their NODE_STARTED rows, in one transaction.

        Tenants take turns, and none gets past ``share.cap`` running nodes on this worker.
        """
        async with self.transaction() as tx:
            return await tx.claim_and_start(owner, limit, lease_seconds, share)

    async def next_due_time(self, now: float) -> float | None:
        """The earliest time after ``now`` at which a job no worker holds falls due (a delay, a retry)."""
        stmt = sa.select(sa.func.min(node_jobs.c.available_at)).where(
            node_jobs.c.available_at > now, node_jobs.c.lease_owner.is_(None)
        )
        async with self.db.read() as conn:
            due = (await conn.execute(stmt)).scalar_one_or_none()
        return None if due is None else float(due)

    async def extend_leases(self, owner: str, job_ids: Sequence[int], lease_seconds: float) -> set[int]:
        """Renew leases; returns the ids still held (a missing id was cancelled or taken over)."""
        if not job_ids:
            return set()
        async with self.transaction() as tx:
            return await tx.jobs.extend(owner, job_ids, lease_seconds)

    async def release_leases(self, owner: str, job: Job | None = None) -> None:
        async with self.transaction() as tx:
            await tx.jobs.release(owner, job)
