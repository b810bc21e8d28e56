"""Retention: the tenants' own policies, and the reads and deletes of the pruner (engine/pruning.py).

A run is *due* when it is finished and past one of its tenant's limits (``Cutoffs``). Never due: a run
that is not finished, a finished child whose caller is not, a run whose failure or SLA notice is not
sent yet, and the latest COMPLETED production run of a workflow that has widgets (it feeds them).

Deleting is select-then-delete in bounded batches: the candidates are read (no lock), then one short
write transaction takes those that are still due (on PostgreSQL ``FOR UPDATE SKIP LOCKED``: two
pruners never wait on each other's rows, and a run another process is deleting is skipped) and
deletes every row they own; on PostgreSQL that transaction is a single statement. A run is deleted
once, however many processes prune at the same time.
"""

from __future__ import annotations

import gc
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa

from flowdeck.domain.retention import RetentionPolicy
from flowdeck.domain.statuses import TERMINAL_RUN_STATUSES, RunStatus
from flowdeck.storage.database import Database
from flowdeck.storage.notice_tables import run_notices
from flowdeck.storage.retention_tables import tenant_retention
from flowdeck.storage.schema import RUN_OWNED_TABLES
from flowdeck.storage.tables import instances, tenants
from flowdeck.storage.widget_tables import widgets

__all__ = (
    "Candidate",
    "Cursor",
    "Cutoffs",
    "Deleted",
    "RetentionStore",
    "TenantPolicy",
    "candidates_statement",
    "due_statement",
)

_FINISHED = sorted(status.value for status in TERMINAL_RUN_STATUSES)
_MAX_DEPTH = 16
"""How many levels of child runs are followed below a deleted run (the nesting limit is 10)."""


@dataclass(frozen=True, slots=True)
class TenantPolicy:
    tenant_id: str
    name: str
    policy: RetentionPolicy
    own: bool
    """The tenant set it (``False``: the server's defaults)."""


@dataclass(frozen=True, slots=True)
class Cutoffs:
    """Finished runs created before these times are due (``None``: that limit is off)."""

    production: float | None
    test: float | None
    count: float | None
    """The creation time of the newest run past the tenant's ``max_runs`` newest."""

    @property
    def any(self) -> bool:
        return self.production is not None or self.test is not None or self.count is not None


@dataclass(frozen=True, slots=True)
class Candidate:
    id: str
    created_at: float
    is_test: bool


@dataclass(frozen=True, slots=True)
class Cursor:
    """Where the previous batch ended: its last creation time and the ids read at exactly that time."""

    created_at: float
    ids: frozenset[str]


@dataclass(frozen=True, slots=True)
class Deleted:
    production: int = 0
    test: int = 0
    seconds: float = 0.0
    """How long the deleting transaction held its locks: PostgreSQL, its one statement as the client
    saw it (an upper bound: it includes the event loop's delay in reading the answer); SQLite, its
    statements (they run on the event loop, and the group's commit is shared)."""
    cpu_seconds: float | None = None
    """SQLite: the CPU the event loop's thread spent meanwhile; far below ``seconds``, the batch waited
    (for the disk, or for a core other processes held) rather than worked. PostgreSQL: ``None``."""
    full_collections: int | None = None
    """SQLite: the full garbage collections that paused the event loop's thread meanwhile (counted as its
    CPU); PostgreSQL: ``None``."""

    @property
    def total(self) -> int:
        return self.production + self.test


_parent = instances.alias("caller")
_caller_unfinished = sa.exists().where(
    _parent.c.id == instances.c.parent_instance_id, _parent.c.status.not_in(_FINISHED)
)
_notice_pending = sa.exists().where(run_notices.c.instance_id == instances.c.id)
_UNFINISHED = sorted(status.value for status in RunStatus if status not in TERMINAL_RUN_STATUSES)
# "not unfinished" rather than "finished": SQLite's planner, with no statistics, took an index on the status
# for ``status IN (…)`` beside 50 ids and read every finished run (tests/integration/test_run_list_plans.py);
# a NOT IN is never an index's, so the ids' primary key is the way in.
_KEEP = (instances.c.status.not_in(_UNFINISHED), ~_caller_unfinished, ~_notice_pending)
"""What every deleted run satisfies, checked again in the deleting transaction."""


class RetentionStore:
    def __init__(self, db: Database) -> None:
        self.db = db

    async def autovacuum_off(self) -> bool:
        """PostgreSQL without autovacuum: what the pruner deletes stays as dead rows, and the queue tables bloat."""
        if self.db.is_sqlite:
            return False
        async with self.db.read(snapshot=False) as conn:
            return bool((await conn.execute(sa.text("SHOW autovacuum"))).scalar() != "on")

    # -- policies -------------------------------------------------------------------------------------
    async def get(self, tenant_id: str) -> RetentionPolicy | None:
        """The tenant's own policy (``None``: it keeps the server's defaults)."""
        t = tenant_retention.c
        stmt = sa.select(t.max_age_days, t.test_max_age_days, t.max_runs).where(t.tenant_id == tenant_id)
        async with self.db.read(snapshot=False) as conn:
            row = (await conn.execute(stmt)).first()
        return None if row is None else RetentionPolicy(int(row[0]), int(row[1]), int(row[2]))

    async def put(self, tenant_id: str, policy: RetentionPolicy, now: float) -> None:
        values = {
            "max_age_days": policy.max_age_days,
            "test_max_age_days": policy.test_max_age_days,
            "max_runs": policy.max_runs,
            "updated_at": now,
        }
        insert = self.db.insert(tenant_retention).values(tenant_id=tenant_id, **values)
        async with self.db.transaction() as conn:
            await conn.execute(insert.on_conflict_do_update(index_elements=["tenant_id"], set_=values))

    async def reset(self, tenant_id: str) -> None:
        """Forget the tenant's own policy (the server's defaults apply again)."""
        async with self.db.transaction() as conn:
            await conn.execute(tenant_retention.delete().where(tenant_retention.c.tenant_id == tenant_id))

    async def tenants(self, defaults: RetentionPolicy) -> list[TenantPolicy]:
        """Every tenant with the policy it prunes by."""
        stmt = (
            sa.select(
                tenants.c.id,
                tenants.c.name,
                tenant_retention.c.max_age_days,
                tenant_retention.c.test_max_age_days,
                tenant_retention.c.max_runs,
            )
            .select_from(tenants.outerjoin(tenant_retention, tenant_retention.c.tenant_id == tenants.c.id))
            .order_by(tenants.c.name)
        )
        async with self.db.read() as conn:
            rows = (await conn.execute(stmt)).all()
        return [
            TenantPolicy(row[0], row[1], defaults, False)
            if row[2] is None
            else TenantPolicy(row[0], row[1], RetentionPolicy(int(row[2]), int(row[3]), int(row[4])), True)
            for row in rows
        ]

    # -- what is due ----------------------------------------------------------------------------------
    async def count_cutoff(self, tenant_id: str, max_runs: int) -> float | None:
        """Runs created before the ``max_runs``-th newest run of the tenant are past its count (``None``:
        it has no more than that). Runs created at the same instant as that one are all kept."""
        stmt = (
            sa.select(instances.c.created_at)
            .where(instances.c.tenant_id == tenant_id)
            .order_by(instances.c.created_at.desc())
            .offset(max_runs - 1)
            .limit(1)
        )
        async with self.db.read(snapshot=False) as conn:
            found = (await conn.execute(stmt)).scalar_one_or_none()
        return None if found is None else float(found)

    async def feeding_widgets(self, tenant_id: str) -> list[str]:
        """The latest COMPLETED production run of each of the tenant's workflows that has widgets."""
        latest = (
            sa.select(instances.c.id)
            .where(
                instances.c.workflow_id == widgets.c.workflow_id,
                instances.c.status == RunStatus.COMPLETED.value,
                instances.c.is_test.is_(False),
            )
            .order_by(instances.c.created_at.desc())
            .limit(1)
            .scalar_subquery()
        )
        stmt = sa.select(latest).where(widgets.c.tenant_id == tenant_id).distinct()
        async with self.db.read(snapshot=False) as conn:
            return [row[0] for row in await conn.execute(stmt) if row[0] is not None]

    async def candidates(
        self, tenant_id: str, cutoffs: Cutoffs, keep: Sequence[str], after: Cursor | None, limit: int
    ) -> list[Candidate]:
        """The tenant's oldest due runs after ``after`` (oldest first), at most ``limit``."""
        stmt = candidates_statement(tenant_id, cutoffs, keep, after, limit)
        if stmt is None:
            return []
        async with self.db.read(snapshot=False) as conn:
            return [Candidate(row[0], row[1], bool(row[2])) for row in await conn.execute(stmt)]

    async def descendants(self, run_ids: Sequence[str], keep: Sequence[str]) -> list[Candidate]:
        """The runs these runs called, and the runs those called, … (except ``keep``)."""
        found: list[Candidate] = []
        level = list(run_ids)
        async with self.db.read() as conn:
            for _ in range(_MAX_DEPTH):
                if not level:
                    break
                stmt = sa.select(instances.c.id, instances.c.created_at, instances.c.is_test).where(
                    instances.c.parent_instance_id.in_(level)
                )
                rows = [Candidate(row[0], row[1], bool(row[2])) for row in await conn.execute(stmt)]
                rows = [row for row in rows if row.id not in keep]
                found.extend(rows)
                level = [row.id for row in rows]
        return found

    # -- deleting -------------------------------------------------------------------------------------
    async def delete(self, run_ids: Sequence[str]) -> Deleted:
        """Delete those of these runs that are still due, with every row they own, in one transaction."""
        if not self.db.is_sqlite:
            return await self._delete_in_one_statement(run_ids)
        async with self.db.transaction() as conn:
            started, cpu = time.perf_counter(), time.thread_time()  # its statements run on the event loop
            collections = _full_collections()
            taken = (await conn.execute(due_statement(run_ids))).all()
            if not taken:
                return Deleted()
            ids = [row[0] for row in taken]
            for table in RUN_OWNED_TABLES:
                await conn.execute(table.delete().where(table.c.instance_id.in_(ids)))
            await conn.execute(instances.delete().where(instances.c.id.in_(ids)))
            seconds, cpu = time.perf_counter() - started, time.thread_time() - cpu
            collections = _full_collections() - collections
        return _deleted([row[1] for row in taken], seconds, cpu, collections)

    async def _delete_in_one_statement(self, run_ids: Sequence[str]) -> Deleted:
        """PostgreSQL: one statement (data-modifying CTEs), its own transaction: the runs are locked
        ``FOR UPDATE SKIP LOCKED`` and deleted with their rows in a single round trip, so the locks are
        held for the statement's execution only, never across the event loop's turns."""
        taken = (
            sa.select(instances.c.id).where(_due(run_ids)).with_for_update(skip_locked=True, of=instances).cte("taken")
        )
        owned = [
            table.delete().where(table.c.instance_id.in_(sa.select(taken.c.id))).cte(f"owned_{table.name}")
            for table in RUN_OWNED_TABLES
        ]
        stmt = (
            instances.delete()
            .where(instances.c.id.in_(sa.select(taken.c.id)))
            .returning(instances.c.is_test)
            .add_cte(*owned)
        )
        async with self.db.autocommit() as conn:
            started = time.perf_counter()
            tests = [row[0] for row in await conn.execute(stmt)]
            seconds = time.perf_counter() - started
        return _deleted(tests, seconds)


def _due(run_ids: Sequence[str]) -> sa.ColumnElement[bool]:
    return sa.and_(instances.c.id.in_(run_ids), *_KEEP)


def due_statement(run_ids: Sequence[str]) -> sa.Select[Any]:
    """Those of these runs still due, read again in the deleting transaction (SQLite)."""
    return sa.select(instances.c.id, instances.c.is_test).where(_due(run_ids))


def candidates_statement(
    tenant_id: str, cutoffs: Cutoffs, keep: Sequence[str], after: Cursor | None, limit: int
) -> sa.Select[Any] | None:
    """The tenant's oldest due runs after ``after`` (oldest first), at most ``limit``; None: none can be."""
    due = []
    if cutoffs.production is not None:
        due.append(sa.and_(instances.c.is_test.is_(False), instances.c.created_at < cutoffs.production))
    if cutoffs.test is not None:
        due.append(sa.and_(instances.c.is_test.is_(True), instances.c.created_at < cutoffs.test))
    if cutoffs.count is not None:
        due.append(instances.c.created_at < cutoffs.count)
    if not due:
        return None
    newest = max(c for c in (cutoffs.production, cutoffs.test, cutoffs.count) if c is not None)
    stmt = (
        sa.select(instances.c.id, instances.c.created_at, instances.c.is_test)
        .where(instances.c.tenant_id == tenant_id, instances.c.created_at < newest, sa.or_(*due), *_KEEP)
        .order_by(instances.c.created_at)
        .limit(limit)
    )
    if keep:
        stmt = stmt.where(instances.c.id.not_in(keep))
    if after is not None:
        stmt = stmt.where(instances.c.created_at >= after.created_at)
        if after.ids:
            stmt = stmt.where(instances.c.id.not_in(sorted(after.ids)))
    return stmt


def _deleted(
    is_test: list[bool], seconds: float, cpu_seconds: float | None = None, full_collections: int | None = None
) -> Deleted:
    tests = sum(1 for test in is_test if test)
    return Deleted(len(is_test) - tests, tests, seconds, cpu_seconds, full_collections)


def _full_collections() -> int:
    return int(gc.get_stats()[2]["collections"])
