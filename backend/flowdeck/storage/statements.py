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
from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql, sqlite

from flowdeck.domain.statuses import EventType
from flowdeck.storage.compiled import compile_statement
from flowdeck.storage.tables import instance_logs, instances, join_barriers, loop_states, node_jobs

__all__ = ("JOB_COLUMNS", "LOG_COLUMNS", "Statements", "statements_for")

LOG_COLUMNS = (
    instance_logs.c.log_id,
    instance_logs.c.instance_id,
    instance_logs.c.node_id,
    instance_logs.c.iteration,
    instance_logs.c.event_type,
    instance_logs.c.node_status,
    instance_logs.c.output_variable,
    instance_logs.c.payload,
    instance_logs.c.error_message,
    instance_logs.c.node_attempt,
    instance_logs.c.created_at,
)

JOB_COLUMNS = (
    node_jobs.c.id,
    node_jobs.c.instance_id,
    node_jobs.c.node_id,
    node_jobs.c.iteration,
    node_jobs.c.attempt,
    node_jobs.c.retry_base,
    node_jobs.c.available_at,
)

_p = sa.bindparam


@dataclass(frozen=True, slots=True)
class Statements:
    insert_log: Any
    insert_log_returning_node: Any
    instance_version: Any
    compare_and_swap: Any
    context_rows: Any
    insert_job: Any
    delete_job: Any
    reschedule_job: Any
    claim_jobs: Any
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
    finish_run_logged: Any
    """PostgreSQL only: a run's final status and its RUN_STATUS row in one round trip."""
    record_result: Any
    """PostgreSQL only: a node's result row and its job's removal in one round trip (None on SQLite)."""
    dispatch_one: Any
    """PostgreSQL only: NODE_DISPATCHED, the job and, when leased, NODE_STARTED in one round trip."""
    claim_and_start: Any
    """PostgreSQL only: lease due jobs and log their NODE_STARTED rows in one round trip."""
    chain_step: Any
    """PostgreSQL only: a whole chain-step decision as one statement (see ``_chain_step``)."""
    start_run: Any
    """PostgreSQL only: a production run's creation as one statement (see ``_start_run``)."""
    end_step: Any
    """PostgreSQL only: an end node's result, and the run's completion if it was the last, as one
    statement (see ``_end_step``)."""
    iteration_step: Any
    """PostgreSQL only: a loop body's last node of an iteration, the iteration's count and the next
    iteration's start, as one statement (see ``_iteration_step``)."""


def _context_rows() -> Any:
    """The rows a node's context folds: the run's own rows, and its ancestors' rows in its scopes.

    Two lookups joined by UNION ALL, each served by an index (the run's rows by node_id IS NULL on
    the idempotency index; node rows by node, scope and event type), in no particular order: the
    caller sorts by log_id. Scanning every row of the run instead made each loop iteration read
    all the per-item rows of the loop.
    """
    columns = (
        instance_logs.c.log_id,
        instance_logs.c.event_type,
        instance_logs.c.node_id,
        instance_logs.c.output_variable,
        instance_logs.c.payload,
    )
    run_rows = sa.select(*columns).where(
        instance_logs.c.instance_id == _p("p_id"),
        instance_logs.c.node_id.is_(None),
        instance_logs.c.event_type.in_([EventType.INPUT_SET.value, EventType.SYSTEM_SET.value]),
        sa.or_(instance_logs.c.output_variable.is_(None), instance_logs.c.output_variable != _p("p_hidden")),
    )
    node_rows = sa.select(*columns).where(
        instance_logs.c.instance_id == _p("p_id"),
        instance_logs.c.node_id.in_(_p("p_nodes", expanding=True)),
        instance_logs.c.iteration.in_(_p("p_scopes", expanding=True)),
        instance_logs.c.event_type.in_([EventType.SYSTEM_SET.value, EventType.NODE_COMPLETED.value]),
    )
    return sa.union_all(run_rows, node_rows)


LOG_VALUES = (
    "instance_id",
    "node_id",
    "iteration",
    "event_type",
    "node_status",
    "output_variable",
    "payload",
    "error_message",
    "node_attempt",
    "created_at",
)


def _typed(name: str, column: sa.Column[Any]) -> Any:
    return _p(name, type_=column.type)


def _record_result() -> Any:
    """Log a node's result and delete its job, which goes only when the row is new (not a duplicate).

    Returns (log_id or NULL, deleted job id or NULL). A data-modifying CTE: one round trip instead of two.
    """
    logged = (
        postgresql.insert(instance_logs)
        .values({name: _p(f"p_{name}") for name in LOG_VALUES})
        .on_conflict_do_nothing()
        .returning(instance_logs.c.log_id)
        .cte("logged")
    )
    removed = (
        node_jobs.delete()
        .where(
            node_jobs.c.id == _p("p_job"),
            node_jobs.c.attempt == _p("p_job_attempt"),
            sa.exists(sa.select(logged.c.log_id)),
        )
        .returning(node_jobs.c.id)
        .cte("removed")
    )
    return sa.select(sa.select(logged.c.log_id).scalar_subquery(), sa.select(removed.c.id).scalar_subquery())


_JOB_INSERT_COLUMNS = [
    *("instance_id", "node_id", "iteration", "attempt"),
    *("retry_base", "available_at", "lease_owner", "created_at"),
]


def _dispatch_one() -> Any:
    """Dispatch one node: its NODE_DISPATCHED row (the guard), then its job only if that row is new,
    then NODE_STARTED only if the job was inserted leased to a worker. Returns the job row (or none)."""
    dispatched = (
        postgresql.insert(instance_logs)
        .values(
            instance_id=_p("p_instance_id"),
            node_id=_p("p_node_id"),
            iteration=_p("p_iteration"),
            event_type=EventType.NODE_DISPATCHED.value,
            node_status="DISPATCHED",
            payload=_p("p_payload"),
            node_attempt=_p("p_attempt"),
            created_at=_p("p_now"),
        )
        .on_conflict_do_nothing()
        .returning(instance_logs.c.instance_id, instance_logs.c.node_id, instance_logs.c.iteration)
        .cte("dispatched")
    )
    job = (
        postgresql.insert(node_jobs)
        .from_select(
            _JOB_INSERT_COLUMNS,
            sa.select(
                dispatched.c.instance_id,
                dispatched.c.node_id,
                dispatched.c.iteration,
                _typed("p_attempt", node_jobs.c.attempt),
                _typed("p_retry_base", node_jobs.c.retry_base),
                _typed("p_available_at", node_jobs.c.available_at),
                _typed("p_lease_owner", node_jobs.c.lease_owner),
                _typed("p_now", node_jobs.c.created_at),
            ),
        )
        .on_conflict_do_nothing()
        .returning(*JOB_COLUMNS, node_jobs.c.lease_owner)
        .cte("job")
    )
    started = _started_rows(job, job.c.lease_owner.is_not(None))
    return sa.select(*(job.c[column.name] for column in JOB_COLUMNS)).add_cte(started)


def _started_rows(jobs: Any, *where: Any) -> Any:
    """A CTE logging NODE_STARTED for each job row of ``jobs`` (a CTE returning job columns)."""
    rows = sa.select(
        jobs.c.instance_id,
        jobs.c.node_id,
        jobs.c.iteration,
        sa.literal(EventType.NODE_STARTED.value),
        sa.literal("RUNNING"),
        jobs.c.attempt,
        _typed("p_now", instance_logs.c.created_at),
    ).where(*where)
    columns = ["instance_id", "node_id", "iteration", "event_type", "node_status", "node_attempt", "created_at"]
    return postgresql.insert(instance_logs).from_select(columns, rows).on_conflict_do_nothing().cte("started")


def _claim_and_start(claim: Any) -> Any:
    """The claim statement, with the NODE_STARTED row of each job it leases (a data-modifying CTE)."""
    claimed = claim.cte("claimed")
    started = _started_rows(claimed)
    return sa.select(*(claimed.c[column.name] for column in JOB_COLUMNS)).add_cte(started)


def _end_step() -> Any:
    """A top-level end node's result decided in one statement: CAS the instance and, when the run is
    RUNNING, this node's job is still there and no other job is left, complete the run with the end
    nodes' outputs merged in log order (this one last, later keys winning) and its RUN_STATUS row;
    log NODE_COMPLETED and remove the job. The conditions are read before the CAS; the CAS's row lock
    and version check make them hold, since every change to a run's jobs is a decision that moves
    its version.

    One row: (status before, whether the run completed, the run output, the log id, the removed job).
    No row when the CAS failed or the result was logged before (nothing was written).
    """
    return sa.text(
        """
WITH pre AS (
    SELECT i.status,
        (i.status = 'RUNNING'
            AND EXISTS (SELECT 1 FROM node_jobs WHERE id = :p_job AND attempt = :p_attempt)
            AND NOT EXISTS (SELECT 1 FROM node_jobs WHERE instance_id = :p_instance_id AND id <> :p_job)
        ) AS finishing
    FROM instances i
    WHERE i.id = :p_instance_id AND i.version = :p_expected
        AND NOT EXISTS (
            SELECT 1 FROM instance_logs
            WHERE instance_id = :p_instance_id AND node_id = :p_node_id AND iteration = ''
                AND event_type = 'NODE_COMPLETED' AND node_attempt = :p_attempt
        )
), earlier AS (
    SELECT COALESCE(jsonb_object_agg(kv.key, kv.value ORDER BY l.log_id), '{}'::jsonb) AS output
    FROM instance_logs l CROSS JOIN LATERAL jsonb_each(l.payload -> 'output') AS kv
    WHERE l.instance_id = :p_instance_id AND l.event_type = 'NODE_COMPLETED' AND l.iteration = ''
        AND l.output_variable IS NOT NULL AND (l.payload ->> 'end') = 'true'
        AND jsonb_typeof(l.payload -> 'output') = 'object'
), cas AS (
    UPDATE instances i SET
        version = :p_next,
        updated_at = CAST(:p_now AS DOUBLE PRECISION),
        status = CASE WHEN pre.finishing THEN 'COMPLETED' ELSE i.status END,
        completed_at = CASE WHEN pre.finishing THEN CAST(:p_now AS DOUBLE PRECISION) ELSE i.completed_at END,
        error = CASE WHEN pre.finishing THEN NULL ELSE i.error END,
        output = CASE WHEN pre.finishing
            THEN (SELECT output FROM earlier) || CAST(:p_end_output AS JSONB) ELSE i.output END
    FROM pre
    WHERE i.id = :p_instance_id AND i.version = :p_expected
    RETURNING pre.status AS before, pre.finishing, i.output
), logged AS (
    INSERT INTO instance_logs
        (instance_id, node_id, iteration, event_type, node_status, output_variable, payload, node_attempt, created_at)
    SELECT CAST(:p_instance_id AS VARCHAR), CAST(:p_node_id AS VARCHAR), '', 'NODE_COMPLETED', 'COMPLETED',
        CAST(:p_output_variable AS VARCHAR), CAST(:p_payload AS JSONB), CAST(:p_attempt AS INTEGER),
        CAST(:p_now AS DOUBLE PRECISION)
    FROM cas
    ON CONFLICT DO NOTHING
    RETURNING log_id
), removed AS (
    DELETE FROM node_jobs
    WHERE id = :p_job AND attempt = :p_attempt AND EXISTS (SELECT 1 FROM logged)
    RETURNING id
), status_row AS (
    INSERT INTO instance_logs (instance_id, iteration, event_type, node_status, payload, node_attempt, created_at)
    SELECT CAST(:p_instance_id AS VARCHAR), '', 'RUN_STATUS', 'COMPLETED', CAST(:p_status_payload AS JSONB), 0,
        CAST(:p_now AS DOUBLE PRECISION)
    FROM cas
    WHERE cas.finishing
)
SELECT cas.before, cas.finishing, cas.output, (SELECT log_id FROM logged), (SELECT id FROM removed)
FROM cas
"""
    )


# Fragments of the one-statement decisions below. ``_LOGGED_RESULT`` (left open: the next CTE
# closes it) appends the node's NODE_COMPLETED row once the ``cas`` CTE succeeded;
# ``_LEASED_JOB_STARTED`` queues the ``dispatched`` node's job, leased to the deciding worker, and
# logs its NODE_STARTED row.
_LOGGED_RESULT = """, logged AS (
    INSERT INTO instance_logs
        (instance_id, node_id, iteration, event_type, node_status, output_variable, payload, node_attempt, created_at)
    SELECT CAST(:p_instance_id AS VARCHAR), CAST(:p_node_id AS VARCHAR), CAST(:p_iteration AS VARCHAR),
        'NODE_COMPLETED', 'COMPLETED', CAST(:p_output_variable AS VARCHAR), CAST(:p_payload AS JSONB),
        CAST(:p_attempt AS INTEGER), CAST(:p_now AS DOUBLE PRECISION)
    FROM cas
    ON CONFLICT DO NOTHING
    RETURNING log_id
"""
_LEASED_JOB_STARTED = """, job AS (
    INSERT INTO node_jobs
        (instance_id, node_id, iteration, attempt, retry_base, available_at, lease_owner, created_at)
    SELECT instance_id, node_id, iteration, 1, 1, CAST(:p_lease_until AS DOUBLE PRECISION),
        CAST(:p_owner AS VARCHAR), CAST(:p_now AS DOUBLE PRECISION)
    FROM dispatched
    ON CONFLICT DO NOTHING
    RETURNING id, instance_id, node_id, iteration, attempt, retry_base, available_at
), started AS (
    INSERT INTO instance_logs (instance_id, node_id, iteration, event_type, node_status, node_attempt, created_at)
    SELECT instance_id, node_id, iteration, 'NODE_STARTED', 'RUNNING', attempt, CAST(:p_now AS DOUBLE PRECISION)
    FROM job
    ON CONFLICT DO NOTHING
)"""


def _iteration_step() -> Any:
    """The node that ends a loop iteration (a body node with no outgoing edge), decided in one statement.

    Taken only when the run is RUNNING, the node's job is still there, no other job of the loop's
    body is left in the iteration's scope (or scopes nested in it), and the loop does not finish
    with this iteration. Then: CAS, NODE_COMPLETED, the job removed, one more finished iteration and,
    when there is a next item (``finished + concurrency - 1``), the loop's body entry dispatched in that
    item's scope with its job leased to the worker and its NODE_STARTED row. This is what the general
    decision (``Orchestrator._settle``) writes in that case; the conditions are read before the CAS,
    whose row lock and version check keep them true (every change to jobs or loop counts is a decision).

    One row (status before, log id, then the next iteration's job columns or NULLs); no row when
    nothing was written (the general path then decides).
    """
    return sa.text(
        f"""
WITH pre AS (
    SELECT i.status, ls.item_count, ls.finished + 1 AS finished,
        ls.finished + CAST(:p_concurrency AS INTEGER) AS next_index
    FROM instances i
    JOIN loop_states ls
        ON ls.instance_id = i.id AND ls.node_id = :p_loop_id AND ls.iteration = :p_parent
    WHERE i.id = :p_instance_id AND i.version = :p_expected AND i.status = 'RUNNING'
        AND ls.finished + 1 < ls.item_count
        AND EXISTS (SELECT 1 FROM node_jobs WHERE id = :p_job AND attempt = :p_attempt)
        AND NOT EXISTS (
            SELECT 1 FROM node_jobs
            WHERE instance_id = :p_instance_id AND id <> :p_job
                AND node_id = ANY(CAST(:p_body AS VARCHAR[]))
                AND (iteration = :p_iteration OR iteration LIKE :p_nested)
        )
        AND NOT EXISTS (
            SELECT 1 FROM instance_logs
            WHERE instance_id = :p_instance_id AND node_id = :p_node_id AND iteration = :p_iteration
                AND event_type = 'NODE_COMPLETED' AND node_attempt = :p_attempt
        )
), cas AS (
    UPDATE instances i SET version = :p_next, updated_at = CAST(:p_now AS DOUBLE PRECISION)
    FROM pre
    WHERE i.id = :p_instance_id AND i.version = :p_expected
    RETURNING pre.status, pre.item_count, pre.next_index
){_LOGGED_RESULT}
), removed AS (
    DELETE FROM node_jobs WHERE id = :p_job AND attempt = :p_attempt AND EXISTS (SELECT 1 FROM logged)
    RETURNING id
), counted AS (
    UPDATE loop_states SET finished = finished + 1
    WHERE instance_id = :p_instance_id AND node_id = :p_loop_id AND iteration = :p_parent
        AND EXISTS (SELECT 1 FROM removed)
    RETURNING item_count
), next_scope AS (
    SELECT CASE WHEN :p_parent = '' THEN CAST(cas.next_index AS VARCHAR)
        ELSE :p_parent || '.' || CAST(cas.next_index AS VARCHAR) END AS iteration
    FROM cas, counted
    WHERE cas.next_index < counted.item_count
), dispatched AS (
    INSERT INTO instance_logs (instance_id, node_id, iteration, event_type, node_status, node_attempt, created_at)
    SELECT CAST(:p_instance_id AS VARCHAR), CAST(:p_entry AS VARCHAR), iteration, 'NODE_DISPATCHED', 'DISPATCHED', 1,
        CAST(:p_now AS DOUBLE PRECISION)
    FROM next_scope
    ON CONFLICT DO NOTHING
    RETURNING instance_id, node_id, iteration
){_LEASED_JOB_STARTED}
SELECT cas.status, (SELECT log_id FROM logged),
    job.id, job.instance_id, job.node_id, job.iteration, job.attempt, job.retry_base, job.available_at
FROM cas LEFT JOIN job ON TRUE
"""
    )


def _start_run() -> Any:
    """A production run created in one statement: the instance, its INPUT_SET and RUN_STATUS rows, and
    its start node's NODE_DISPATCHED row and job (due now), as the general path writes them."""
    return sa.text(
        """
WITH instance AS (
    INSERT INTO instances (id, tenant_id, workflow_id, workflow_version, is_test, status, version, trigger,
        input, created_at, started_at, updated_at, deadline_at)
    VALUES (CAST(:p_id AS VARCHAR), CAST(:p_tenant_id AS VARCHAR), CAST(:p_workflow_id AS VARCHAR),
        CAST(:p_workflow_version AS INTEGER), false, 'RUNNING', 1, CAST(:p_trigger AS VARCHAR),
        CAST(:p_input AS JSONB), CAST(:p_now AS DOUBLE PRECISION), CAST(:p_now AS DOUBLE PRECISION),
        CAST(:p_now AS DOUBLE PRECISION), CAST(:p_deadline AS DOUBLE PRECISION))
    RETURNING id
), logged AS (
    INSERT INTO instance_logs (instance_id, node_id, iteration, event_type, node_status, payload, node_attempt,
        created_at)
    SELECT id, NULL, '', 'INPUT_SET', NULL, CAST(:p_input_payload AS JSONB), 0, CAST(:p_now AS DOUBLE PRECISION)
    FROM instance
    UNION ALL
    SELECT id, NULL, '', 'RUN_STATUS', 'RUNNING', CAST(:p_status_payload AS JSONB), 0, CAST(:p_now AS DOUBLE PRECISION)
    FROM instance
    UNION ALL
    SELECT id, CAST(:p_start_id AS VARCHAR), '', 'NODE_DISPATCHED', 'DISPATCHED', NULL, 1,
        CAST(:p_now AS DOUBLE PRECISION)
    FROM instance
)
INSERT INTO node_jobs (instance_id, node_id, iteration, attempt, retry_base, available_at, lease_owner, created_at)
SELECT id, CAST(:p_start_id AS VARCHAR), '', 1, 1, CAST(:p_now AS DOUBLE PRECISION), NULL,
    CAST(:p_now AS DOUBLE PRECISION)
FROM instance
RETURNING id, instance_id, node_id, iteration, attempt, retry_base, available_at
"""
    )


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


_RUN_STATUS_COLUMNS = [
    *("instance_id", "iteration", "event_type", "node_status"),
    *("payload", "error_message", "node_attempt", "created_at"),
]


def _finish_run_logged() -> Any:
    finished = (
        instances.update()
        .where(instances.c.id == _p("p_id"))
        .values(
            status=_p("p_status"),
            updated_at=_p("p_now"),
            completed_at=_p("p_now"),
            error=_p("p_error"),
            output=_p("p_output"),
        )
        .returning(instances.c.id)
        .cte("finished")
    )
    return postgresql.insert(instance_logs).from_select(
        _RUN_STATUS_COLUMNS,
        sa.select(
            finished.c.id,
            sa.literal(""),
            sa.literal(EventType.RUN_STATUS.value),
            _typed("p_status", instance_logs.c.node_status),
            _typed("p_payload", instance_logs.c.payload),
            _typed("p_error", instance_logs.c.error_message),
            sa.literal(0),
            _typed("p_now", instance_logs.c.created_at),
        ),
    )


def _chain_step() -> Any:
    """A chain's step, decided in one statement: CAS the instance, log the node's NODE_COMPLETED, delete
    its job and, if the run is RUNNING and the job was still there, dispatch the successor with its
    job leased to the worker and its NODE_STARTED row. Each part runs only if the one before did, so it
    writes exactly what the general decision (``Orchestrator.handle_result``) writes for this case.

    One row: (instance status or NULL when the CAS failed or the result was logged before, the log id
    or NULL for a duplicate delivered concurrently,
    the deleted job id or NULL, then the successor's job columns or NULLs).
    """
    return sa.text(
        f"""
WITH cas AS (
    UPDATE instances SET version = :p_next, updated_at = :p_now
    WHERE id = :p_instance_id AND version = :p_expected
        AND NOT EXISTS (  -- a duplicate delivery leaves even the version alone (the general path sees it)
            SELECT 1 FROM instance_logs
            WHERE instance_id = :p_instance_id AND node_id = :p_node_id AND iteration = :p_iteration
                AND event_type = 'NODE_COMPLETED' AND node_attempt = :p_attempt
        )
    RETURNING status
){_LOGGED_RESULT}
), removed AS (
    DELETE FROM node_jobs
    WHERE id = :p_job AND attempt = :p_attempt AND EXISTS (SELECT 1 FROM logged)
    RETURNING id
), dispatched AS (
    INSERT INTO instance_logs (instance_id, node_id, iteration, event_type, node_status, node_attempt, created_at)
    SELECT CAST(:p_instance_id AS VARCHAR), CAST(:p_successor AS VARCHAR), CAST(:p_iteration AS VARCHAR),
        'NODE_DISPATCHED', 'DISPATCHED', 1, CAST(:p_now AS DOUBLE PRECISION)
    FROM removed, cas
    WHERE cas.status = 'RUNNING'
    ON CONFLICT DO NOTHING
    RETURNING instance_id, node_id, iteration
){_LEASED_JOB_STARTED}
SELECT (SELECT status FROM cas), (SELECT log_id FROM logged), (SELECT id FROM removed),
    job.id, job.instance_id, job.node_id, job.iteration, job.attempt, job.retry_base, job.available_at
FROM (SELECT 1) AS one LEFT JOIN job ON TRUE
"""
    )


@functools.cache
def statements_for(is_sqlite: bool, *, one_statement: bool = True) -> Statements:
    """The statements of a dialect. The PostgreSQL-only single statements (data-modifying CTEs) are
    ``None`` on SQLite, and on PostgreSQL when ``one_statement`` is off (the portable path then)."""
    single = not is_sqlite and one_statement
    insert = sqlite.insert if is_sqlite else postgresql.insert
    due = (
        sa.select(node_jobs.c.id)
        .where(node_jobs.c.available_at <= _p("p_now"))
        .order_by(node_jobs.c.available_at)
        .limit(_p("p_limit"))
    )
    if not is_sqlite:
        due = due.with_for_update(skip_locked=True)
    barrier_insert = insert(join_barriers)
    claim_jobs = (
        node_jobs.update()
        .where(node_jobs.c.id.in_(due.scalar_subquery()))
        .values(lease_owner=_p("p_owner"), available_at=_p("p_until"))
        .returning(*JOB_COLUMNS)
    )
    core = Statements(
        insert_log=insert(instance_logs).on_conflict_do_nothing().returning(instance_logs.c.log_id),
        insert_log_returning_node=insert(instance_logs).on_conflict_do_nothing().returning(instance_logs.c.node_id),
        instance_version=sa.select(instances.c.status, instances.c.version).where(instances.c.id == _p("p_id")),
        compare_and_swap=instances.update()
        .where(instances.c.id == _p("p_id"), instances.c.version == _p("p_expected"))
        .values(version=_p("p_next"), updated_at=_p("p_now"))
        .returning(instances.c.status),
        context_rows=_context_rows(),
        insert_job=insert(node_jobs).on_conflict_do_nothing().returning(*JOB_COLUMNS),
        delete_job=node_jobs.delete().where(node_jobs.c.id == _p("p_id"), node_jobs.c.attempt == _p("p_attempt")),
        reschedule_job=node_jobs.update()
        .where(node_jobs.c.id == _p("p_id"), node_jobs.c.attempt == _p("p_attempt"))
        .values(attempt=_p("p_next"), available_at=_p("p_due"), lease_owner=None),
        claim_jobs=claim_jobs,
        extend_leases=node_jobs.update()
        .where(node_jobs.c.id.in_(_p("p_ids", expanding=True)), node_jobs.c.lease_owner == _p("p_owner"))
        .values(available_at=_p("p_until"))
        .returning(node_jobs.c.id),
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
        ),
        reopen_run=instances.update()
        .where(instances.c.id == _p("p_id"))
        .values(
            status=_p("p_status"),
            updated_at=_p("p_now"),
            completed_at=None,
            error=_p("p_error"),
            deadline_at=_p("p_deadline"),
        ),
        get_instance=sa.select(instances).where(instances.c.id == _p("p_id")),
        outputs_if_idle=_outputs_if_idle(),
        finish_run_logged=None if not single else _finish_run_logged(),
        record_result=None if not single else _record_result(),
        dispatch_one=None if not single else _dispatch_one(),
        claim_and_start=None if not single else _claim_and_start(claim_jobs),
        chain_step=None if not single else _chain_step(),
        start_run=None if not single else _start_run(),
        end_step=None if not single else _end_step(),
        iteration_step=None if not single else _iteration_step(),
    )
    return _compiled(core, is_sqlite)


_INSTANCE_VALUES = (
    *("id", "tenant_id", "workflow_id", "workflow_version", "is_test", "status", "version", "trigger", "input"),
    *("created_at", "started_at", "updated_at", "deadline_at"),
)
_BARRIER_VALUES = ("instance_id", "node_id", "iteration", "resolved_edges", "taken_edges")


def _compiled(core: Statements, is_sqlite: bool) -> Statements:
    """The per-node and per-run statements, run on the driver directly (see storage/compiled.py)."""

    def c(
        statement: Any,
        column_keys: Sequence[str] | None = None,
        json_names: Sequence[str] = (),
        returns_rows: bool | None = None,
        json_columns: Sequence[int] = (),
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
        )

    return dataclasses.replace(
        core,
        insert_log=c(core.insert_log, LOG_VALUES, ["payload"]),
        insert_log_returning_node=c(core.insert_log_returning_node, LOG_VALUES, ["payload"]),
        instance_version=c(core.instance_version),
        compare_and_swap=c(core.compare_and_swap),
        insert_job=c(core.insert_job, _JOB_INSERT_COLUMNS),
        delete_job=c(core.delete_job),
        reschedule_job=c(core.reschedule_job),
        claim_jobs=c(core.claim_jobs),
        bump_barrier=c(core.bump_barrier, _BARRIER_VALUES),
        finish_iteration=c(core.finish_iteration),
        insert_instance=c(core.insert_instance, _INSTANCE_VALUES, ["input"]),
        finish_run=c(core.finish_run, json_names=["p_output"]),
        reopen_run=c(core.reopen_run),
        record_result=c(core.record_result, json_names=["p_payload"]),
        dispatch_one=c(core.dispatch_one, json_names=["p_payload"]),
        claim_and_start=c(core.claim_and_start),
        chain_step=c(core.chain_step, json_names=["p_payload"], returns_rows=True),
        outputs_if_idle=c(core.outputs_if_idle, json_columns=[2]),
        finish_run_logged=c(core.finish_run_logged, json_names=["p_output", "p_payload"]),
        iteration_step=c(core.iteration_step, json_names=["p_payload"], returns_rows=True),
        end_step=c(core.end_step, json_names=["p_payload", "p_end_output", "p_status_payload"], returns_rows=True),
        start_run=c(core.start_run, json_names=["p_input", "p_input_payload", "p_status_payload"], returns_rows=True),
    )
