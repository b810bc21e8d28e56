"""Read-only queries the API needs about runs: lists, detail, log pages and timelines. Always per tenant.

Every query takes the caller's tenant id: a run of another tenant is simply not found.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, replace
from typing import Any

import sqlalchemy as sa

from flowdeck.domain.statuses import RunStatus
from flowdeck.storage.database import Database
from flowdeck.storage.flow import FlowRow, run_flow_of
from flowdeck.storage.log_fold import GraphShape, NodeView, TimelineRow, fold_nodes, retry_count, timeline_rows
from flowdeck.storage.records import InstanceRecord, LogRow
from flowdeck.storage.run_labels import labels_of, rarest_first
from flowdeck.storage.state import StateManager
from flowdeck.storage.statements import LOG_COLUMNS
from flowdeck.storage.tables import instance_logs, instances, run_labels

__all__ = (
    "COUNT_CAP",
    "RunFilter",
    "RunQueries",
    "RunView",
    "ShapeOf",
    "TimelineRow",
    "count_statement",
    "list_statement",
    "run_statement",
    "timeline_rows",
)

ShapeOf = Callable[[InstanceRecord], Awaitable[GraphShape | None]]
"""The shape of a run's graph (``None`` when it cannot be read): asked only for a run that ended unfinished."""

RunKey = tuple[float, str]
"""Position in the newest-first run list: (created_at, id) of the last run of a page."""

_COLUMNS = (
    instances.c.id,
    instances.c.tenant_id,
    instances.c.workflow_id,
    instances.c.workflow_version,
    instances.c.is_test,
    instances.c.status,
    instances.c.version,
    instances.c.trigger,
    instances.c.input,
    instances.c.output,
    instances.c.error,
    instances.c.created_at,
    instances.c.started_at,
    instances.c.completed_at,
    instances.c.updated_at,
    instances.c.deadline_at,
    instances.c.sla_breached_at,
    instances.c.parent_instance_id,
    instances.c.parent_node_id,
    instances.c.parent_iteration,
    instances.c.parent_attempt,
    instances.c.depth,
)
_LIST_COLUMNS = tuple(c for c in _COLUMNS if c.name not in ("input", "output"))


@dataclass(frozen=True, slots=True)
class RunFilter:
    workflow_id: str | None = None
    status: RunStatus | None = None
    is_test: bool | None = None
    created_from: float | None = None
    """Runs created at or after this time (epoch seconds)."""
    created_to: float | None = None
    """Runs created before this time (epoch seconds)."""
    id_prefix: str | None = None
    """Runs whose id starts with this (a pasted short id)."""
    trigger: str | None = None
    """How the run started (``api``, ``webhook``, ``schedule``, ``test``, ``workflow`` ...)."""
    parent_instance_id: str | None = None
    """Runs a ``workflow`` node of this run started (its sub-workflow calls)."""
    labels: tuple[tuple[str, str], ...] = ()
    """Runs carrying every one of these ``(name, value)`` labels."""


@dataclass(frozen=True, slots=True)
class RunView:
    run: InstanceRecord
    nodes: dict[str, NodeView]
    retries: int = 0


def _record(row: sa.Row[tuple[object, ...]], with_payloads: bool = True) -> InstanceRecord:
    m = dict(row._mapping)
    if not with_payloads:
        m.update(input=None, output=None)
    m["status"] = RunStatus(m["status"])
    return InstanceRecord(**m)


def run_statement(tenant_id: str, instance_id: str) -> sa.Select[Any]:
    return sa.select(*_COLUMNS).where(instances.c.id == instance_id, instances.c.tenant_id == tenant_id)


COUNT_CAP = 10_000
"""Run counts are exact up to this many; beyond it the list says "10,000+" (a count walks at most this far)."""

_NARROW_PREFIX = 4
"""An id prefix this long matches one run in 65,536 (ids are random hex)."""


def list_statement(tenant_id: str, filters: RunFilter, after: RunKey | None, limit: int) -> sa.Select[Any]:
    """A page of the run list, newest first.

    Each filter walks an index newest first (storage/tables.py; tests/integration/test_run_list_plans.py
    checks the plans): with labels the first label's index drives, the run joined by its id.
    """
    narrow = filters.parent_instance_id is not None or len(filters.id_prefix or "") >= _NARROW_PREFIX
    # A caller's runs and a long id prefix are a handful: found through their own index, then sorted. The
    # other columns are then compared as expressions, which no index offers, so that SQLite (which keeps
    # no statistics) cannot prefer walking the tenant's history, or a status's runs, instead.
    tenant, workflow, status = (
        (c.concat("") if narrow else c) for c in (instances.c.tenant_id, instances.c.workflow_id, instances.c.status)
    )
    stmt = sa.select(*_LIST_COLUMNS).where(tenant == tenant_id)
    created, ident = instances.c.created_at, instances.c.id
    if filters.labels:
        # The first label's index drives and gives the order (its rows copy the run's created_at); every
        # other label is one primary-key lookup per run, as a scalar subquery: PostgreSQL's generic plan
        # (prepared statements) would otherwise join two labels' whole index ranges by hash.
        (name, value), *others = filters.labels
        label = run_labels.alias("label_0")
        stmt = stmt.join(label, label.c.instance_id == instances.c.id).where(
            label.c.tenant_id == tenant_id, label.c.name == name, label.c.value == value
        )
        created, ident = label.c.created_at, label.c.instance_id
        for name, value in others:
            has = sa.select(run_labels.c.value).where(run_labels.c.instance_id == label.c.instance_id)
            stmt = stmt.where(has.where(run_labels.c.name == name).scalar_subquery() == value)
    if filters.workflow_id is not None:
        stmt = stmt.where(workflow == filters.workflow_id)
    if filters.status is not None:
        stmt = stmt.where(status == filters.status.value)
    if filters.is_test is not None:
        stmt = stmt.where(instances.c.is_test == filters.is_test)
    if filters.created_from is not None:
        stmt = stmt.where(created >= filters.created_from)
    if filters.created_to is not None:
        stmt = stmt.where(created < filters.created_to)
    if filters.trigger is not None:
        stmt = stmt.where(instances.c.trigger == filters.trigger)
    if filters.parent_instance_id is not None:
        stmt = stmt.where(instances.c.parent_instance_id == filters.parent_instance_id)
    if filters.id_prefix:
        # The range lets the primary key's index find the prefix (LIKE cannot use it on either
        # database); LIKE keeps the match exact whatever the collation.
        stmt = stmt.where(
            instances.c.id >= filters.id_prefix,
            instances.c.id < filters.id_prefix + "\U0010ffff",
            instances.c.id.startswith(filters.id_prefix, autoescape=True),
        )
    if after is not None:
        after_created, last_id = after
        # A row value: every list index ends in (created_at, id), so the next page starts right there.
        stmt = stmt.where(sa.tuple_(created, ident) < sa.tuple_(after_created, last_id))
    return stmt.order_by(created.desc(), ident.desc()).limit(limit)


def count_statement(tenant_id: str, filters: RunFilter) -> sa.Select[Any]:
    """How many runs the list's filters match, counting at most ``COUNT_CAP + 1``: the first page's walk, longer."""
    page = list_statement(tenant_id, filters, None, COUNT_CAP + 1).with_only_columns(instances.c.id)
    return sa.select(sa.func.count()).select_from(page.subquery())


async def _rarest_label_first(conn: Any, tenant_id: str, filters: RunFilter) -> RunFilter:
    """With several labels, the rarest drives the walk (its index has the fewest entries to read)."""
    if len(filters.labels) < 2:
        return filters
    return replace(filters, labels=tuple(await rarest_first(conn, tenant_id, filters.labels)))


class RunQueries:
    def __init__(self, db: Database, state: StateManager) -> None:
        self.db = db
        self.state = state

    async def get_run(self, tenant_id: str, instance_id: str) -> InstanceRecord | None:
        async with self.db.read() as conn:
            row = (await conn.execute(run_statement(tenant_id, instance_id))).first()
        return None if row is None else _record(row)

    async def list_runs(
        self, tenant_id: str, filters: RunFilter, after: RunKey | None, limit: int
    ) -> tuple[list[InstanceRecord], RunKey | None]:
        """Newest first; the second value is the key to pass as ``after`` for the next page (``None``: last page)."""
        async with self.db.read() as conn:
            filters = await _rarest_label_first(conn, tenant_id, filters)
            rows = (await conn.execute(list_statement(tenant_id, filters, after, limit + 1))).all()
        records = [_record(row, with_payloads=False) for row in rows[:limit]]
        more = len(rows) > limit
        return records, ((records[-1].created_at, records[-1].id) if more else None)

    async def count_runs(self, tenant_id: str, filters: RunFilter) -> int:
        """How many runs match, exact up to ``COUNT_CAP``; ``COUNT_CAP + 1`` means more.

        The list's own statement, cut at ``COUNT_CAP + 1`` rows, so a count walks the same index as the
        first page and never more than that many entries, whatever the tenant's history holds.
        """
        async with self.db.read() as conn:
            filters = await _rarest_label_first(conn, tenant_id, filters)
            return int((await conn.execute(count_statement(tenant_id, filters))).scalar_one())

    async def labels_of(self, instance_ids: Iterable[str]) -> dict[str, dict[str, str]]:
        """The labels of these runs (``{}`` for one without)."""
        async with self.db.read(snapshot=False) as conn:
            return await labels_of(conn, instance_ids)

    async def flow_of(self, instance_id: str) -> FlowRow | None:
        """The run's flow-control row (its priority, why it waits), if it has one."""
        async with self.db.read(snapshot=False) as conn:
            return await run_flow_of(conn, instance_id)

    async def retries_of(self, instance_ids: Iterable[str]) -> dict[str, int]:
        """How many partial retries each of these runs had (left out: none). Every run logs RUNNING once when it
        starts and once more per retry; one grouped read of the log's run-level rows, by its instance index."""
        ids = list(instance_ids)
        if not ids:
            return {}
        stmt = (
            sa.select(instance_logs.c.instance_id, sa.func.count())
            .where(
                instance_logs.c.instance_id.in_(ids),
                instance_logs.c.node_id.is_(None),
                instance_logs.c.event_type == "RUN_STATUS",
                instance_logs.c.node_status == RunStatus.RUNNING.value,
            )
            .group_by(instance_logs.c.instance_id)
            .having(sa.func.count() > 1)
        )
        async with self.db.read(snapshot=False) as conn:
            return {instance_id: int(count) - 1 for instance_id, count in (await conn.execute(stmt)).all()}

    async def run_view(self, tenant_id: str, instance_id: str, shape_of: ShapeOf | None = None) -> RunView | None:
        """The run and its nodes; with ``shape_of``, a run that ended unfinished lists what never started."""
        run = await self.get_run(tenant_id, instance_id)
        if run is None:
            return None
        rows = await self.state.read_log(instance_id)
        unfinished = run.status in (RunStatus.FAILED, RunStatus.CANCELLED)
        shape = await shape_of(run) if shape_of is not None and unfinished else None
        return RunView(run, fold_nodes(rows, run.status, shape), retry_count(rows))

    async def scope_rows(self, instance_id: str, node_id: str, iteration: str) -> list[LogRow]:
        """One node's rows in one scope (a loop iteration, or ``""``), in log order; the caller checked the tenant."""
        stmt = (
            sa.select(*LOG_COLUMNS)
            .where(
                instance_logs.c.instance_id == instance_id,
                instance_logs.c.node_id == node_id,
                instance_logs.c.iteration == iteration,
            )
            .order_by(instance_logs.c.log_id)
        )
        async with self.db.read() as conn:
            return [LogRow(*row) for row in await conn.execute(stmt)]

    async def events(
        self, tenant_id: str, instance_id: str, after_log_id: int, limit: int
    ) -> tuple[list[LogRow], int | None] | None:
        """A page of the run's log in log order, and the log id to continue after (``None``: last page)."""
        if await self.get_run(tenant_id, instance_id) is None:
            return None
        rows = await self.state.read_log(instance_id, after_log_id=after_log_id, limit=limit + 1)
        page = rows[:limit]
        return page, (page[-1].log_id if len(rows) > limit else None)

    async def timeline(self, tenant_id: str, instance_id: str) -> list[TimelineRow] | None:
        run = await self.get_run(tenant_id, instance_id)
        if run is None:
            return None
        return timeline_rows(await self.state.read_log(instance_id), run)
