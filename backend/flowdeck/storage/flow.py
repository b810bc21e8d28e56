"""The rows of flow control (engine/flow_control.py): a group's slots counted under its lock, queued and
debounced runs, and the one conditional UPDATE that takes a run out of its wait (exactly one process does).

A group is locked for the rest of the transaction before it is counted or changed: on PostgreSQL with a
transaction-scoped advisory lock on the group's name, on SQLite by its single writer (``BEGIN IMMEDIATE``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa

from flowdeck.domain.flow_control import DEFAULT_PRIORITY, aged_at
from flowdeck.domain.statuses import RunStatus
from flowdeck.storage.compiled import compile_each
from flowdeck.storage.database import Connection
from flowdeck.storage.tables import instances, node_jobs, run_flow

__all__ = (
    "CONCURRENCY",
    "DEBOUNCE",
    "FlowRow",
    "Waiting",
    "add_flow_row",
    "clear_waiting",
    "debounced_in_window",
    "group_holders",
    "group_queue",
    "lock_group",
    "park_jobs",
    "ready_rows",
    "release_start",
    "replace_flow_row",
    "run_flow_of",
    "run_priority",
    "take_waiting",
)

CONCURRENCY = "concurrency"
DEBOUNCE = "debounce"
_ACTIVE = (RunStatus.PENDING.value, RunStatus.RUNNING.value)
_f, _i = run_flow.c, instances.c


@dataclass(frozen=True, slots=True)
class FlowRow:
    instance_id: str
    workflow_id: str
    group_key: str | None
    debounce_key: str | None
    concurrency_limit: int | None
    strategy: str | None
    priority: int
    waiting: str | None
    ready_at: float


@dataclass(frozen=True, slots=True)
class Waiting:
    """A PENDING run waiting in its group's queue (or its debounce window)."""

    instance_id: str
    workflow_id: str
    group_key: str | None
    concurrency_limit: int | None
    strategy: str | None
    waiting: str


def _aged(step_seconds: Any) -> Any:
    """The queue order: when the run became ready, aged by its priority (domain/flow_control.py ``aged_at``,
    the rule node-job claims order by too)."""
    return aged_at(_f.ready_at, _f.priority, step_seconds)


async def lock_group(conn: Connection, *, is_sqlite: bool, name: str) -> None:
    if not is_sqlite:
        await conn.execute(sa.select(sa.func.pg_advisory_xact_lock(sa.func.hashtextextended(name, 0))))


async def add_flow_row(conn: Connection, row: FlowRow) -> None:
    values = {name: getattr(row, name) for name in FlowRow.__slots__}
    await conn.execute(run_flow.insert().values(**values))


async def replace_flow_row(conn: Connection, row: FlowRow) -> None:
    """A retried run's flow control, worked out afresh (its version's options may have changed)."""
    await conn.execute(run_flow.delete().where(_f.instance_id == row.instance_id))
    await add_flow_row(conn, row)


async def group_holders(conn: Connection, workflow_id: str, group_key: str) -> list[str]:
    """The runs holding a slot of the group (admitted, not ended), oldest first."""
    rows = await conn.execute(
        sa.select(_f.instance_id)
        .join(instances, _i.id == _f.instance_id)
        .where(_f.workflow_id == workflow_id, _f.group_key == group_key, _f.waiting.is_(None), _i.status.in_(_ACTIVE))
        .order_by(_i.created_at, _i.id)
    )
    return [row[0] for row in rows]


async def group_queue(conn: Connection, workflow_id: str, group_key: str, step_seconds: float) -> list[Waiting]:
    """The runs queued for a slot of the group, in the order they are to be taken."""
    rows = await conn.execute(
        sa.select(_f.instance_id, _f.workflow_id, _f.group_key, _f.concurrency_limit, _f.strategy, _f.waiting)
        .join(instances, _i.id == _f.instance_id)
        .where(
            _f.workflow_id == workflow_id,
            _f.group_key == group_key,
            _f.waiting == CONCURRENCY,
            _i.status == RunStatus.PENDING.value,
        )
        .order_by(_aged(step_seconds), _f.instance_id)
    )
    return [Waiting(*row) for row in rows]


async def debounced_in_window(conn: Connection, workflow_id: str, debounce_key: str, now: float) -> list[str]:
    """The runs of the debounce group still inside their window (a new start replaces them)."""
    rows = await conn.execute(
        sa.select(_f.instance_id)
        .join(instances, _i.id == _f.instance_id)
        .where(
            _f.workflow_id == workflow_id,
            _f.debounce_key == debounce_key,
            _f.waiting == DEBOUNCE,
            _f.ready_at > now,
            _i.status == RunStatus.PENDING.value,
        )
    )
    return [row[0] for row in rows]


_READY_ROWS = compile_each(  # at every run's end (admission is nudged then): run on the driver, compiled once
    sa.select(_f.instance_id, _f.workflow_id, _f.group_key, _f.concurrency_limit, _f.strategy, _f.waiting)
    .join(instances, _i.id == _f.instance_id)
    .where(_f.waiting.is_not(None), _f.ready_at <= sa.bindparam("p_now"), _i.status == RunStatus.PENDING.value)
    .order_by(_aged(sa.bindparam("p_step", type_=sa.Float)), _f.instance_id)
    .limit(sa.bindparam("p_limit"))
)


async def ready_rows(
    conn: Connection, *, is_sqlite: bool, now: float, step_seconds: float, limit: int
) -> list[Waiting]:
    """Waiting runs that may be ready: queued ones, and debounced ones past their window."""
    parameters = {"p_now": now, "p_step": step_seconds, "p_limit": limit}
    return [Waiting(*row) for row in await conn.execute(_READY_ROWS.on(is_sqlite), parameters)]


async def take_waiting(conn: Connection, instance_id: str, waiting: str, *, then: str | None = None) -> bool:
    """Move a run out of ``waiting`` (to ``then``); ``False`` when another transaction already did."""
    result = await conn.execute(
        run_flow.update().where(_f.instance_id == instance_id, _f.waiting == waiting).values(waiting=then)
    )
    return bool(result.rowcount == 1)


async def clear_waiting(conn: Connection, instance_id: str) -> None:
    """A run ended while it waited (cancelled, failed at its deadline): it leaves the queue."""
    await conn.execute(run_flow.update().where(_f.instance_id == instance_id).values(waiting=None))


async def release_start(conn: Connection, instance_id: str, now: float) -> None:
    """The parked jobs of an admitted run fall due now (a new run's start job, a queued retry's jobs)."""
    await conn.execute(
        node_jobs.update()
        .where(node_jobs.c.instance_id == instance_id, node_jobs.c.lease_owner.is_(None))
        .values(available_at=now)
    )


async def park_jobs(conn: Connection, instance_id: str, until: float) -> None:
    """A queued retry's jobs wait, unleased, until admission makes them due (``release_start``)."""
    await conn.execute(
        node_jobs.update()
        .where(node_jobs.c.instance_id == instance_id, node_jobs.c.lease_owner.is_(None))
        .values(available_at=until)
    )


async def run_flow_of(conn: Connection, instance_id: str) -> FlowRow | None:
    row = (
        await conn.execute(sa.select(*(_f[name] for name in FlowRow.__slots__)).where(_f.instance_id == instance_id))
    ).first()
    return None if row is None else FlowRow(*row)


_PRIORITY = compile_each(  # read by every process the first time it runs a node of a run: run on the driver
    sa.select(_f.priority).where(_f.instance_id == sa.bindparam("p_id"))
)


async def run_priority(conn: Connection, instance_id: str, *, is_sqlite: bool) -> int:
    """The run's priority: its flow-control row's, else the default (a run without one was started at 50)."""
    value = (await conn.execute(_PRIORITY.on(is_sqlite), {"p_id": instance_id})).scalar_one_or_none()
    return DEFAULT_PRIORITY if value is None else int(value)
