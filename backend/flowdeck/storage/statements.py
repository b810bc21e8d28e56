"""The engine's hot-path statements, built once per dialect with bind parameters.

Building a Core statement and its cache key costs far more than SQLite takes to run it, so every
statement on the per-node path is constructed here once and executed with a parameter dict.
Bind names carry a ``p_`` prefix so they never clash with the column names of an UPDATE.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql, sqlite

from flowdeck.domain.flow_control import aged_at
from flowdeck.domain.statuses import EventType, RunStatus
from flowdeck.storage.compiled import compile_statement
from flowdeck.storage.records import InstanceRecord, LogEvent
from flowdeck.storage.tables import instance_logs, instances, join_barriers, loop_states, node_jobs

INSTANCE_RECORD_COLUMNS: Final = tuple(field.name for field in dataclasses.fields(InstanceRecord))
"""The columns ``get_instance`` reads, in the order of ``InstanceRecord``'s fields."""
_INSTANCE_JSON_COLUMNS: Final = tuple(INSTANCE_RECORD_COLUMNS.index(name) for name in ("input", "output"))

__all__ = ("JOB_COLUMNS", "JOB_INSERT_COLUMNS", "LOG_COLUMNS", "LOG_VALUES", "Statements", "statements_for", "typed")

LOG_COLUMNS = tuple(instance_logs.c)
"""Every column of a log row, in the order of ``LogRow``."""

JOB_COLUMNS = (
    node_jobs.c.id,
    node_jobs.c.instance_id,
    node_jobs.c.node_id,
    node_jobs.c.iteration,
    node_jobs.c.attempt,
    node_jobs.c.retry_base,
    node_jobs.c.available_at,
    node_jobs.c.tenant_id,
    node_jobs.c.lease_owner,
    node_jobs.c.takeovers,
    node_jobs.c.priority,
)

_p = sa.bindparam


@dataclass(frozen=True, slots=True)
class Statements:
    insert_log: Any
    insert_log_returning_node: Any
    instance_version: Any
    compare_and_swap: Any
    take_next_version: Any
    context_rows: Any
    insert_job: Any
    delete_job: Any
    park_job: Any
    reschedule_job: Any
    claim_jobs: Any
    claim_jobs_aged: Any
    claim_one_tenant: Any
    claim_one_tenant_aged: Any
    due_tenants: Any
    extend_leases: Any
    bump_barrier: Any
    scope_job: Any
    finish_iteration: Any
    insert_instance: Any
    finish_run: Any
    reopen_run: Any
    get_instance: Any
    outputs_if_idle: Any
    """A marker row when the run has no job left, then its end nodes' output rows (nothing when it has)."""


def _extend_leases() -> Any:
    """Renew the owner's leases on the given jobs, skipping a row a decision holds locked (PostgreSQL; SQLite
    has one writer and no row locks): a heartbeat never waits on a decision, so it cannot delay the other
    renewals or deadlock with a decision that locks another of the worker's jobs. The skipped lease is renewed
    at the next beat (it is a third of the lease away); the worker reads a job missing from the answer only
    as "was its run cancelled?" (engine/worker.py ``heartbeat``)."""
    j = node_jobs.c
    held = (
        sa.select(j.id)
        .where(j.id.in_(_p("p_ids", expanding=True)), j.lease_owner == _p("p_owner"))
        .with_for_update(skip_locked=True)
    )
    return node_jobs.update().where(j.id.in_(held)).values(available_at=_p("p_until")).returning(j.id)


def _this_job() -> tuple[Any, ...]:
    """One job at one attempt: its id *and* its node. SQLite gives a deleted row's id to the next row inserted
    (no AUTOINCREMENT), so the job a stale result names by id is often its successor's, at the same attempt 1:
    the node's key (unique while the job exists) keeps a late result from removing or moving another's job."""
    j = node_jobs.c
    return (
        j.id == _p("p_id"),
        j.attempt == _p("p_attempt"),
        j.instance_id == _p("p_instance"),
        j.node_id == _p("p_node"),
        j.iteration == _p("p_scope"),
    )


RUN_CONTEXT_EVENTS: Final = (EventType.INPUT_SET, EventType.SYSTEM_SET)
"""The event types of the run's own rows that a node's context folds (``context_rows``, ``in_run_context``)."""


def in_run_context(event: LogEvent, hidden: str) -> bool:
    """Whether ``context_rows`` returns this row among the run's own (the rule of its first lookup, for a row
    not yet read back: a run's first transaction knows its start node's context, storage/state.run_context)."""
    return event.node_id is None and event.event_type in RUN_CONTEXT_EVENTS and event.output_variable != hidden


def _context_rows(is_sqlite: bool) -> Any:
    """The rows a node's context folds: the run's own rows, and its ancestors' rows in its scopes.

    Two lookups joined by UNION ALL, each served by an index (the run's rows by node_id IS NULL on
    the idempotency index; node rows by node, scope and event type), in no particular order: the
    caller sorts by log_id. Scanning every row of the run instead made each loop iteration read
    all the per-item rows of the loop. The node and scope lists are one parameter each (a JSON
    array on SQLite, an array on PostgreSQL), so the statement is compiled once and runs on the
    driver: as an expanding IN list, SQLAlchemy rendered it again at every node.
    """
    columns = (
        instance_logs.c.log_id,
        instance_logs.c.event_type,
        instance_logs.c.node_id,
        instance_logs.c.output_variable,
        instance_logs.c.payload,
        instance_logs.c.iteration,
        instance_logs.c.node_attempt,
    )
    run_rows = sa.select(*columns).where(
        instance_logs.c.instance_id == _p("p_id"),
        instance_logs.c.node_id.is_(None),
        _one_of(instance_logs.c.event_type, *RUN_CONTEXT_EVENTS),
        sa.or_(instance_logs.c.output_variable.is_(None), instance_logs.c.output_variable != _p("p_hidden")),
    )
    node_rows = sa.select(*columns).where(
        instance_logs.c.instance_id == _p("p_id"),
        _in_list(instance_logs.c.node_id, "p_nodes", is_sqlite),
        _in_list(instance_logs.c.iteration, "p_scopes", is_sqlite),
        _one_of(instance_logs.c.event_type, EventType.SYSTEM_SET, EventType.NODE_COMPLETED),
    )
    return sa.union_all(run_rows, node_rows)


CONTEXT_ROWS_LISTS: Final = ("p_nodes", "p_scopes")
"""``context_rows``'s list parameters (JSON-encoded on SQLite)."""


def _one_of(column: sa.Column[Any], *kinds: EventType) -> Any:
    """``column IN`` constants written into the SQL (an expanding list would be rendered at every execution)."""
    return column.in_([sa.literal_column(f"'{kind.value}'") for kind in kinds])


def _in_list(column: sa.Column[Any], name: str, is_sqlite: bool) -> Any:
    """``column IN`` a list given as one parameter: ``json_each`` of a JSON array on SQLite, ``= ANY`` of an array
    on PostgreSQL; both probe the column's index once per element."""
    if is_sqlite:
        return column.in_(sa.select(sa.column("value")).select_from(sa.func.json_each(_p(name))))
    return column == sa.any_(_p(name, type_=postgresql.ARRAY(column.type)))


LOG_VALUES = tuple(c.name for c in LOG_COLUMNS if c is not instance_logs.c.log_id)
"""The columns a new log row sets (all but its generated id)."""


def typed(name: str, column: sa.Column[Any]) -> Any:
    """A bind parameter of ``column``'s type (where PostgreSQL cannot infer it, as in a SELECT list)."""
    return _p(name, type_=column.type)


JOB_INSERT_COLUMNS = [c.name for c in node_jobs.c if c is not node_jobs.c.id]
"""The columns a new job sets (all but its generated id)."""
_JOB_RETURNED = tuple("rowid" if c is node_jobs.c.id else c.name for c in JOB_COLUMNS)
"""``JOB_COLUMNS`` as an INSERT on SQLite returns them without RETURNING (its id is the row id)."""


def _end_output_rows() -> Any:
    return sa.select(instance_logs.c.log_id, instance_logs.c.payload).where(
        instance_logs.c.instance_id == _p("p_id"),
        instance_logs.c.event_type == EventType.NODE_COMPLETED.value,
        instance_logs.c.iteration == "",
        instance_logs.c.output_variable.is_not(None),
    )


def _outputs_if_idle() -> Any:
    idle = ~sa.exists().where(node_jobs.c.instance_id == _p("p_id"))
    marker = sa.select(sa.literal(0).label("k"), sa.literal(0).label("log_id"), sa.null().label("payload")).where(idle)
    rows = _end_output_rows().where(idle).subquery()
    outputs = sa.select(sa.literal(1), rows.c.log_id, rows.c.payload)
    return sa.union_all(marker, outputs).order_by("k", "log_id")


def _held(is_sqlite: bool, tenant: Any) -> Any:
    """How many running nodes of ``tenant`` the claiming worker holds (``p_held``: a JSON object)."""
    held: Any
    if is_sqlite:
        held = sa.func.json_extract(_p("p_held"), sa.literal('$."') + tenant + sa.literal('"'))
    else:
        held = sa.cast(sa.cast(_p("p_held"), postgresql.JSONB).op("->>")(tenant), sa.Integer)
    return sa.func.coalesce(held, 0)


def _due_tenants() -> Any:
    """The tenants with due jobs, each with the lowest and highest priority of its due jobs: one tenant
    alone takes a one-tenant claim, several the fair one; either ranks by ``_aged`` only when some
    tenant's due jobs have different priorities (else the due order is the aged order)."""
    j = node_jobs.c
    return (
        sa.select(j.tenant_id, sa.func.min(j.priority), sa.func.max(j.priority))
        .where(j.available_at <= _p("p_now"))
        .group_by(j.tenant_id)
    )


def _aged() -> Any:
    """A job's place in its tenant's turn: its due time aged by its run's priority (``p_step``: seconds per
    point, FLOWDECK_PRIORITY_STEP_SECONDS), the rule flow-control queues order by (domain/flow_control.py)."""
    j = node_jobs.c
    return aged_at(j.available_at, j.priority, _p("p_step", type_=sa.Double()))


def _claim_one_tenant(is_sqlite: bool, *, aged: bool = False) -> Any:
    """``_claim_jobs`` when one tenant alone has due jobs: its first ``p_limit`` (the caller already took
    its running nodes off the cap), with no ranking. When its due jobs share one priority the aged order
    is the due order, so the plain claim walks ``ix_node_jobs_tenant_available`` and stops at its limit (a
    wide fan-out's claim stays a short index range); ``aged``: their priorities differ, and the tenant's
    due jobs are sorted by ``_aged``."""
    j = node_jobs.c
    chosen = (
        sa.select(j.id)
        .where(j.tenant_id == _p("p_tenant"), j.available_at <= _p("p_now"))
        .order_by(*((_aged(), j.id) if aged else (j.available_at, j.id)))
        .limit(_p("p_limit"))
    )
    if not is_sqlite:
        chosen = chosen.with_for_update(skip_locked=True)
    return _lease(chosen)


def _lease(chosen: Any) -> Any:
    """Lease the ``chosen`` jobs; one some worker held (its lease ran out) is taken over: it starts the
    next attempt (``retry_base`` moves with it, so the retry budget is not spent) and its
    ``takeovers`` count grows."""
    j = node_jobs.c
    taken_over = j.lease_owner.is_not(None)

    def on_takeover(column: Any) -> Any:
        return sa.case((taken_over, column + 1), else_=column)

    return (
        node_jobs.update()
        .where(j.id.in_(chosen.scalar_subquery()))
        .values(
            lease_owner=_p("p_owner"),
            available_at=_p("p_until"),
            attempt=on_takeover(j.attempt),
            retry_base=on_takeover(j.retry_base),
            takeovers=on_takeover(j.takeovers),
        )
        .returning(*JOB_COLUMNS, _run_version())
    )


def _run_version() -> Any:
    """The claimed job's run's version (``Job.run_version``), while the run is RUNNING: a one-statement step
    assumes it is (a PENDING run's first decision begins it: the general decision's)."""
    running = instances.c.status == RunStatus.RUNNING.value
    return (
        sa.select(instances.c.version)
        .where(instances.c.id == node_jobs.c.instance_id, running)
        .scalar_subquery()
        .label("run_version")
    )


def _claim_jobs(is_sqlite: bool, *, aged: bool = False) -> Any:
    """Lease up to ``p_limit`` due jobs to ``p_owner``, round-robin across tenants, none past ``p_cap``.

    Each due job is ranked within its tenant (oldest first; ``aged``: by ``_aged``, higher priority first,
    lifted by age, for when some tenant's due jobs have different priorities); a tenant's rank counts on
    from the running nodes the worker already holds of it (``p_held``), and a job is taken only while that
    stays within ``p_cap``. The lowest ranks go first: one job of every waiting tenant, then a second
    of each, and so on (within a round, the one due longest first: priority never lets a tenant jump
    another's turn). The window function ranks in a subquery (PostgreSQL forbids FOR UPDATE beside
    it); PostgreSQL then locks the chosen rows with SKIP LOCKED in rank order, so competing workers
    take the next ones instead of waiting. ``_lease`` takes over jobs whose lease ran out.
    """
    j = node_jobs.c
    due = j.available_at <= _p("p_now")
    rank = sa.func.row_number().over(
        partition_by=j.tenant_id, order_by=(_aged(), j.id) if aged else (j.available_at, j.id)
    )
    ranked = sa.select(j.id, j.tenant_id, j.available_at, rank.label("rank")).where(due).subquery("ranked")
    score = ranked.c.rank + _held(is_sqlite, ranked.c.tenant_id)
    order = (score, ranked.c.available_at, ranked.c.id)
    # A tenant's job ranked past p_limit can never be among the p_limit taken (its own earlier jobs come
    # first): leaving those out first keeps a wide fan-out's claim from scoring every due job.
    within = sa.and_(ranked.c.rank <= _p("p_limit"), score <= _p("p_cap"))
    if is_sqlite:  # one writer at a time: nothing to lock
        chosen = sa.select(ranked.c.id).where(within).order_by(*order).limit(_p("p_limit"))
    else:
        chosen = (
            sa.select(j.id)
            .join(ranked, ranked.c.id == j.id)
            .where(due, within)
            .order_by(*order)
            .limit(_p("p_limit"))
            .with_for_update(of=node_jobs, skip_locked=True)
        )
    return _lease(chosen)


@functools.cache
def statements_for(is_sqlite: bool) -> Statements:
    """The statements every dialect runs (PostgreSQL's single statements: storage/statements_postgres.py)."""
    insert = sqlite.insert if is_sqlite else postgresql.insert
    barrier_insert = insert(join_barriers)
    claim_jobs = _claim_jobs(is_sqlite)
    core = Statements(
        insert_log=insert(instance_logs).on_conflict_do_nothing().returning(instance_logs.c.log_id),
        insert_log_returning_node=insert(instance_logs).on_conflict_do_nothing().returning(instance_logs.c.node_id),
        instance_version=sa.select(instances.c.status, instances.c.version).where(instances.c.id == _p("p_id")),
        compare_and_swap=instances.update()
        .where(instances.c.id == _p("p_id"), instances.c.version == _p("p_expected"))
        .values(version=instances.c.version + 1, updated_at=_p("p_now"))
        .returning(instances.c.status),
        take_next_version=instances.update()
        .where(instances.c.id == _p("p_id"))
        .values(version=instances.c.version + 1, updated_at=_p("p_now"))
        .returning(instances.c.status, instances.c.version, instances.c.output_bytes),
        context_rows=_context_rows(is_sqlite),
        insert_job=insert(node_jobs).on_conflict_do_nothing().returning(*JOB_COLUMNS),
        delete_job=node_jobs.delete().where(*_this_job()),
        reschedule_job=node_jobs.update()
        .where(*_this_job())
        .values(attempt=_p("p_next"), available_at=_p("p_due"), lease_owner=None),
        park_job=node_jobs.update().where(*_this_job()).values(lease_owner=None, available_at=_p("p_until")),
        claim_jobs=claim_jobs,
        claim_jobs_aged=_claim_jobs(is_sqlite, aged=True),
        claim_one_tenant=_claim_one_tenant(is_sqlite),
        claim_one_tenant_aged=_claim_one_tenant(is_sqlite, aged=True),
        due_tenants=_due_tenants(),
        extend_leases=_extend_leases(),
        bump_barrier=barrier_insert.on_conflict_do_update(
            index_elements=[join_barriers.c.instance_id, join_barriers.c.node_id, join_barriers.c.iteration],
            set_={
                "resolved_edges": join_barriers.c.resolved_edges + barrier_insert.excluded.resolved_edges,
                "taken_edges": join_barriers.c.taken_edges + barrier_insert.excluded.taken_edges,
            },
        ).returning(join_barriers.c.node_id, join_barriers.c.resolved_edges, join_barriers.c.taken_edges),
        scope_job=sa.select(node_jobs.c.id)
        .where(
            node_jobs.c.instance_id == _p("p_instance"),
            node_jobs.c.node_id.in_(_p("p_nodes", expanding=True)),
            sa.or_(node_jobs.c.iteration == _p("p_scope"), node_jobs.c.iteration.like(_p("p_nested"))),
        )
        .limit(1),
        finish_iteration=loop_states.update()
        .where(
            loop_states.c.instance_id == _p("p_instance"),
            loop_states.c.node_id == _p("p_node"),
            loop_states.c.iteration == _p("p_scope"),
        )
        .values(finished=loop_states.c.finished + 1)
        .returning(loop_states.c.item_count, loop_states.c.finished, loop_states.c.attempt),
        insert_instance=insert(instances),
        finish_run=instances.update()
        .where(instances.c.id == _p("p_id"))
        .values(
            status=_p("p_status"),
            updated_at=_p("p_now"),
            completed_at=_p("p_now"),
            error=_p("p_error"),
            output=_p("p_output"),
        )
        .returning(instances.c.parent_instance_id, instances.c.parent_node_id, instances.c.parent_iteration),
        reopen_run=instances.update()
        .where(instances.c.id == _p("p_id"))
        .values(
            status=_p("p_status"),
            updated_at=_p("p_now"),
            completed_at=None,
            error=_p("p_error"),
            deadline_at=_p("p_deadline"),
        ),
        get_instance=sa.select(*(instances.c[name] for name in INSTANCE_RECORD_COLUMNS)).where(
            instances.c.id == _p("p_id")
        ),
        outputs_if_idle=_outputs_if_idle(),
    )
    return _compiled(core, is_sqlite)


_INSTANCE_VALUES = (
    *("id", "tenant_id", "workflow_id", "workflow_version", "is_test", "status", "version", "trigger", "input"),
    *("created_at", "started_at", "updated_at", "deadline_at"),
    *("parent_instance_id", "parent_node_id", "parent_iteration", "parent_attempt", "depth", "root_instance_id"),
    "requested_by",
)
_CONTEXT_PAYLOAD: Final = 4
"""The payload's place among ``context_rows``' columns."""
_BARRIER_VALUES = ("instance_id", "node_id", "iteration", "resolved_edges", "taken_edges")


def _compiled(core: Statements, is_sqlite: bool) -> Statements:
    """The per-node and per-run statements, run on the driver directly (see storage/compiled.py)."""

    def c(
        statement: Any,
        column_keys: Sequence[str] | None = None,
        json_names: Sequence[str] = (),
        returns_rows: bool | None = None,
        json_columns: Sequence[int] = (),
        sqlite_inserted: tuple[Any, tuple[str, ...]] | None = None,
    ) -> Any:
        if statement is None:
            return None
        return compile_statement(
            statement,
            is_sqlite=is_sqlite,
            column_keys=column_keys,
            json_names=json_names,
            returns_rows=returns_rows,
            json_columns=json_columns,
            sqlite_inserted=sqlite_inserted,
        )

    log_without_returning = sqlite.insert(instance_logs).on_conflict_do_nothing()  # (SQLite only)
    job_without_returning = sqlite.insert(node_jobs).on_conflict_do_nothing()

    return dataclasses.replace(
        core,
        insert_log=c(core.insert_log, LOG_VALUES, ["payload"], sqlite_inserted=(log_without_returning, ("rowid",))),
        insert_log_returning_node=c(
            core.insert_log_returning_node,
            LOG_VALUES,
            ["payload"],
            sqlite_inserted=(log_without_returning, ("node_id",)),
        ),
        instance_version=c(core.instance_version),
        compare_and_swap=c(core.compare_and_swap),
        take_next_version=c(core.take_next_version),
        context_rows=c(
            core.context_rows, json_names=CONTEXT_ROWS_LISTS if is_sqlite else (), json_columns=[_CONTEXT_PAYLOAD]
        ),
        insert_job=c(core.insert_job, JOB_INSERT_COLUMNS, sqlite_inserted=(job_without_returning, _JOB_RETURNED)),
        delete_job=c(core.delete_job),
        park_job=c(core.park_job),
        reschedule_job=c(core.reschedule_job),
        claim_jobs=c(core.claim_jobs, json_names=["p_held"]),
        claim_jobs_aged=c(core.claim_jobs_aged, json_names=["p_held"]),
        claim_one_tenant=c(core.claim_one_tenant),
        claim_one_tenant_aged=c(core.claim_one_tenant_aged),
        due_tenants=c(core.due_tenants),
        bump_barrier=c(core.bump_barrier, _BARRIER_VALUES),
        finish_iteration=c(core.finish_iteration),
        insert_instance=c(core.insert_instance, _INSTANCE_VALUES, ["input"]),
        finish_run=c(core.finish_run, json_names=["p_output"]),
        reopen_run=c(core.reopen_run),
        outputs_if_idle=c(core.outputs_if_idle, json_columns=[2]),
        get_instance=c(core.get_instance, json_columns=_INSTANCE_JSON_COLUMNS),
    )
