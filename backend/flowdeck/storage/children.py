"""Sub-workflows in storage: which run a ``workflow`` node called, waking the caller when that run
ends, and the reads the call, the cascade and a depth error need.

A call is recorded twice in the caller's decision transaction: a SYSTEM_SET row named ``CALL_KEY`` on
the calling node's attempt (the caller's log says when it called which run; the unique index makes a
repeated call a no-op) and the child's ``parent_*`` columns. While the child runs, the calling node's
job is parked (``JobTable.park``): unleased and due at the node's timeout, so no worker slot waits.
The child's ending transaction makes that job due now (``wake_parent``; on PostgreSQL inside the one
statement that ends the run), so the caller resumes exactly once, in whichever process claims it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final

import sqlalchemy as sa

from flowdeck.domain.statuses import TERMINAL_RUN_STATUSES, EventType, RunStatus
from flowdeck.storage.database import Connection, Database
from flowdeck.storage.tables import instance_logs, instances, node_jobs, workflows

__all__ = (
    "CALL_KEY",
    "MAX_DEPTH",
    "ChildRun",
    "ChildRuns",
    "ParentRef",
    "count_tree_run",
    "requester_of",
    "wake_parent",
)

CALL_KEY: Final = "__call"
"""The output variable of the SYSTEM_SET row recording a call (never folded into a context)."""

MAX_DEPTH: Final = 10
"""How deeply runs may nest: a run nothing called has depth 0, its child 1, and so on."""

_TERMINAL = [s.value for s in TERMINAL_RUN_STATUSES]
_UNFINISHED = [RunStatus.RUNNING.value, RunStatus.PENDING.value]


@dataclass(frozen=True, slots=True)
class ParentRef:
    """The ``workflow`` node attempt that started a run."""

    instance_id: str
    node_id: str
    iteration: str
    attempt: int


@dataclass(frozen=True, slots=True)
class ChildRun:
    instance_id: str
    workflow_id: str | None
    status: RunStatus
    output: Any
    error: str | None
    created_at: float
    parent_attempt: int


async def wake_parent(conn: Connection, parent: tuple[str | None, str | None, str | None], now: float) -> bool:
    """Make the parked job of the node that called an ending run due now; ``False`` when there is none
    (the run had no caller, or the caller is no longer waiting: it is running, timed out or ended)."""
    instance_id, node_id, iteration = parent
    if instance_id is None:
        return False
    j = node_jobs.c
    result = await conn.execute(
        node_jobs.update()
        .where(
            j.instance_id == instance_id,
            j.node_id == node_id,
            j.iteration == iteration,
            j.lease_owner.is_(None),
            j.available_at > now,
        )
        .values(available_at=now)
    )
    return bool(result.rowcount)


async def requester_of(conn: Connection, instance_id: str) -> str | None:
    """Who started the run (a called run is its caller's: the self-approval rule follows the tree)."""
    stmt = sa.select(instances.c.requested_by).where(instances.c.id == instance_id)
    found = (await conn.execute(stmt)).scalar_one_or_none()
    return None if found is None else str(found)


async def count_tree_run(conn: Connection, caller_id: str, max_runs: int) -> str | None:
    """Count one more run in the tree of ``caller_id`` (in the transaction that creates it) and return
    the tree's root, or ``None`` when the tree already holds ``max_runs`` runs (nothing counted).

    The count lives on the root's row and one conditional UPDATE both checks and raises it: on PostgreSQL
    the row lock makes concurrent calls of one tree wait for each other, and each re-reads ``tree_runs``
    once the one before it committed (READ COMMITTED re-checks the WHERE on the updated row); SQLite has
    one writer at a time. So a tree never passes the cap, whichever process calls."""
    caller = instances.alias("caller")
    root = (
        sa.select(sa.func.coalesce(caller.c.root_instance_id, caller.c.id))
        .where(caller.c.id == caller_id)
        .scalar_subquery()
    )
    counted = await conn.execute(
        instances.update()
        .where(instances.c.id == root, instances.c.tree_runs < max_runs)
        .values(tree_runs=instances.c.tree_runs + 1)
        .returning(instances.c.id)
    )
    return counted.scalar_one_or_none()  # type: ignore[no-any-return]


async def deadline_of(conn: Connection, instance_id: str) -> float | None:
    """A run's deadline (its timeout or ``deadlineAt``): a child's deadline is never later."""
    stmt = sa.select(instances.c.deadline_at).where(instances.c.id == instance_id)
    return (await conn.execute(stmt)).scalar_one_or_none()  # type: ignore[no-any-return]


_CHILD_COLUMNS = (
    instances.c.id,
    instances.c.workflow_id,
    instances.c.status,
    instances.c.output,
    instances.c.error,
    instances.c.created_at,
    instances.c.parent_attempt,
)


class ChildRuns:
    """The reads about calls: the child of a node, whether an attempt ended, children to cancel, callers."""

    def __init__(self, db: Database) -> None:
        self.db = db

    async def latest_call(self, parent_id: str, node_id: str, iteration: str) -> ChildRun | None:
        """The run the node's latest call started in this iteration, if it called one."""
        stmt = (
            sa.select(*_CHILD_COLUMNS)
            .where(
                instances.c.parent_instance_id == parent_id,
                instances.c.parent_node_id == node_id,
                instances.c.parent_iteration == iteration,
            )
            .order_by(instances.c.parent_attempt.desc(), instances.c.created_at.desc())
            .limit(1)
        )
        async with self.db.read(snapshot=False) as conn:
            row = (await conn.execute(stmt)).first()
        if row is None:
            return None
        return ChildRun(row[0], row[1], RunStatus(row[2]), row[3], row[4], row[5], int(row[6] or 0))

    async def attempt_ended(self, parent_id: str, node_id: str, iteration: str, attempt: int) -> bool:
        """Does the caller's log hold a result (or a cancellation) of that attempt of the node?"""
        ends = [EventType.NODE_COMPLETED.value, EventType.NODE_FAILED.value, EventType.NODE_CANCELLED.value]
        stmt = (
            sa.select(instance_logs.c.log_id)
            .where(
                instance_logs.c.instance_id == parent_id,
                instance_logs.c.node_id == node_id,
                instance_logs.c.iteration == iteration,
                instance_logs.c.node_attempt == attempt,
                instance_logs.c.event_type.in_(ends),
            )
            .limit(1)
        )
        async with self.db.read(snapshot=False) as conn:
            return (await conn.execute(stmt)).first() is not None

    async def failed_for_good(self, instance_id: str) -> bool:
        """Did the run fail on an error no retry can help (a node's non-retryable failure, such as a
        nesting depth past the limit)? A caller does not retry such a child."""
        stmt = (
            sa.select(instance_logs.c.payload)
            .where(
                instance_logs.c.instance_id == instance_id,
                instance_logs.c.event_type == EventType.NODE_FAILED.value,
            )
            .order_by(instance_logs.c.log_id.desc())
            .limit(1)
        )
        async with self.db.read(snapshot=False) as conn:
            payload = (await conn.execute(stmt)).scalar_one_or_none()
        return isinstance(payload, dict) and payload.get("retryable") is False

    async def unfinished_children(self, parent_id: str) -> list[str]:
        """The runs this run called that are still PENDING or RUNNING, in the order it called them (so a
        cascade writes its rows in the same order on every database: without the order PostgreSQL
        returns them as they lie in the table, which updates shuffle)."""
        stmt = (
            sa.select(instances.c.id)
            .where(instances.c.parent_instance_id == parent_id, instances.c.status.in_(_UNFINISHED))
            .order_by(instances.c.created_at, instances.c.parent_node_id, instances.c.parent_iteration, instances.c.id)
        )
        async with self.db.read(snapshot=False) as conn:
            return list((await conn.execute(stmt)).scalars())

    async def orphans(self, limit: int = 100) -> list[tuple[str, str]]:
        """(child, parent) of unfinished runs whose caller has ended or is gone: a cascade that did not
        happen (the process that ended the caller stopped first)."""
        parent = instances.alias("parent")
        stmt = (
            sa.select(instances.c.id, instances.c.parent_instance_id)
            .select_from(instances.outerjoin(parent, parent.c.id == instances.c.parent_instance_id))
            .where(
                instances.c.status.in_(_UNFINISHED),
                instances.c.parent_instance_id.is_not(None),
                sa.or_(parent.c.id.is_(None), parent.c.status.in_(_TERMINAL)),
            )
            .order_by(instances.c.created_at, instances.c.id)
            .limit(limit)
        )
        async with self.db.read(snapshot=False) as conn:
            return [(row[0], row[1]) for row in await conn.execute(stmt)]

    async def descendants(self, instance_id: str) -> list[str]:
        """Every run this run called, and the runs those called, deepest last."""
        found: list[str] = []
        level = [instance_id]
        async with self.db.read(snapshot=False) as conn:
            for _ in range(MAX_DEPTH + 1):
                stmt = sa.select(instances.c.id).where(instances.c.parent_instance_id.in_(level))
                level = list((await conn.execute(stmt)).scalars())
                if not level:
                    break
                found += level
        return found

    async def callers(self, instance_id: str) -> list[str]:
        """The titles of the workflows from the outermost caller down to this run's (a depth error names them)."""
        chain: list[str] = []
        current: str | None = instance_id
        async with self.db.read(snapshot=False) as conn:
            for _ in range(MAX_DEPTH + 2):
                if current is None:
                    break
                row = (
                    await conn.execute(
                        sa.select(instances.c.parent_instance_id, instances.c.workflow_id, workflows.c.title)
                        .select_from(instances.outerjoin(workflows, workflows.c.id == instances.c.workflow_id))
                        .where(instances.c.id == current)
                    )
                ).first()
                if row is None:
                    break
                chain.append(str(row[2] or row[1] or "a test run"))
                current = row[0]
        return chain[::-1]
