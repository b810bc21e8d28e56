"""PostgreSQL's single statements: decisions and write pairs as data-modifying CTEs (one round trip).

Each restates in SQL a rule that lives in Python, named in its docstring ("Restates: ..."), and writes
exactly the rows the portable path writes for the same case. What holds them equal is
tests/integration/test_generated_equivalence.py (generated workflows and delivery orders, on SQLite
and on PostgreSQL with and without these statements) and tests/integration/test_one_statement_equivalence.py
(hand-picked topologies); a rule changed on one side only fails them (docs/engine.md, "How a rule
change lands"). The chain step, the most common decision, is in storage/chain_batches.py. Status and
event names are rendered from the enums of domain/statuses.py, column lists from the table
definitions, so neither is copied by hand.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql

from flowdeck.domain.flow_control import DEFAULT_PRIORITY
from flowdeck.domain.statuses import EventType, NodeStatus, RunStatus
from flowdeck.storage.compiled import compile_statement
from flowdeck.storage.pg_durability import ASYNC_COMMIT_SQL
from flowdeck.storage.run_bytes import add_charge, charge_fits
from flowdeck.storage.statements import JOB_COLUMNS, JOB_INSERT_COLUMNS, LOG_VALUES, statements_for, typed
from flowdeck.storage.tables import instance_logs, instances, node_jobs

__all__ = ("PostgresStatements", "postgres_statements", "started_payload_sql")

_p = sa.bindparam


@dataclass(frozen=True, slots=True)
class PostgresStatements:
    finish_run_logged: Any
    """A run's final status and its RUN_STATUS row."""
    record_result: Any
    """A node's result row and its job's removal."""
    dispatch_one: Any
    """NODE_DISPATCHED, the job and, when leased, NODE_STARTED."""
    claim_and_start: Any
    """Lease due jobs and log their NODE_STARTED rows."""
    claim_one_and_start: Any
    """The same when one tenant alone has due jobs (``statements._claim_one_tenant``)."""
    claim_aged_and_start: Any
    """``claim_and_start`` ranking each tenant's due jobs by aged priority (``statements._claim_jobs``)."""
    claim_one_aged_and_start: Any
    """The same when its due jobs' priorities differ (``statements._claim_one_tenant``, ``aged``)."""
    start_run: Any
    """A production run's creation (see ``_start_run``)."""
    end_step: Any
    """An end node's result, and the run's completion if it was the last (see ``_end_step``)."""
    iteration_step: Any
    """A loop body's last node of an iteration, the iteration's count and the next iteration's start
    (see ``_iteration_step``)."""


def _q(value: StrEnum) -> str:
    """A status or event name as an SQL string literal."""
    return f"'{value.value}'"


def _names(*columns: sa.Column[Any]) -> str:
    return ", ".join(column.name for column in columns)


_L = instance_logs.c
_J = node_jobs.c
_RESULT_COLUMNS = (
    _names(_L.instance_id, _L.node_id, _L.iteration, _L.event_type, _L.node_status, _L.output_variable, _L.payload)
    + ", "
    + _names(_L.node_attempt, _L.created_at)
)
_NODE_EVENT_COLUMNS = _names(_L.instance_id, _L.node_id, _L.iteration, _L.event_type, _L.node_status)
_NEW_JOB_COLUMNS = ", ".join(JOB_INSERT_COLUMNS)
_JOB_RETURNING = _names(*JOB_COLUMNS)
_DONE = f"{_q(EventType.NODE_COMPLETED)}, {_q(NodeStatus.COMPLETED)}"
_DISPATCHED = f"{_q(EventType.NODE_DISPATCHED)}, {_q(NodeStatus.DISPATCHED)}"
_STARTED = f"{_q(EventType.NODE_STARTED)}, {_q(NodeStatus.RUNNING)}"


def _record_result() -> Any:
    """Log a node's result and delete its job, which goes only when the row is new (not a duplicate).

    Returns (log_id or NULL, deleted job id or NULL). A data-modifying CTE: one round trip instead of two.

    Restates: ``StateTransaction.record_result`` (storage/state.py).
    """
    logged = (
        postgresql.insert(instance_logs)
        .values({name: _p(f"p_{name}") for name in LOG_VALUES})
        .on_conflict_do_nothing()
        .returning(_L.log_id)
        .cte("logged")
    )
    removed = (
        node_jobs.delete()
        .where(_J.id == _p("p_job"), _J.attempt == _p("p_job_attempt"), sa.exists(sa.select(logged.c.log_id)))
        .returning(_J.id)
        .cte("removed")
    )
    return sa.select(sa.select(logged.c.log_id).scalar_subquery(), sa.select(removed.c.id).scalar_subquery())


def _dispatch_one() -> Any:
    """Dispatch one node: its NODE_DISPATCHED row (the guard), then its job only if that row is new,
    then NODE_STARTED only if the job was inserted leased to a worker. Returns the job row (or none).

    Restates: ``StateTransaction.dispatch_one`` (storage/state.py), as ``Decision.dispatch`` uses it."""
    dispatched = (
        postgresql.insert(instance_logs)
        .values(
            instance_id=_p("p_instance_id"),
            node_id=_p("p_node_id"),
            iteration=_p("p_iteration"),
            event_type=EventType.NODE_DISPATCHED.value,
            node_status=NodeStatus.DISPATCHED.value,
            payload=_p("p_payload"),
            node_attempt=_p("p_attempt"),
            created_at=_p("p_now"),
        )
        .on_conflict_do_nothing()
        .returning(_L.instance_id, _L.node_id, _L.iteration)
        .cte("dispatched")
    )
    job = (
        postgresql.insert(node_jobs)
        .from_select(
            JOB_INSERT_COLUMNS,
            sa.select(
                dispatched.c.instance_id,
                dispatched.c.node_id,
                dispatched.c.iteration,
                typed("p_attempt", _J.attempt),
                typed("p_retry_base", _J.retry_base),
                typed("p_available_at", _J.available_at),
                typed("p_lease_owner", _J.lease_owner),
                typed("p_now", _J.created_at),
                typed("p_tenant_id", _J.tenant_id),
                sa.literal(0),
                typed("p_priority", _J.priority),
            ),
        )
        .on_conflict_do_nothing()
        .returning(*JOB_COLUMNS)
        .cte("job")
    )
    started = _started_rows(job, job.c.lease_owner.is_not(None))
    return sa.select(*(job.c[column.name] for column in JOB_COLUMNS)).add_cte(started)


def _started_rows(jobs: Any, *where: Any) -> Any:
    """NODE_STARTED rows for the jobs of a CTE (its job columns), naming the worker that holds each.

    Restates: ``StateTransaction.claim_and_start`` (storage/state.py) logging ``log_rows.started_payload``."""
    rows = (
        sa.select(
            jobs.c.instance_id,
            jobs.c.node_id,
            jobs.c.iteration,
            sa.literal(EventType.NODE_STARTED.value),
            sa.literal(NodeStatus.RUNNING.value),
            sa.literal_column(started_payload_sql(jobs.name)),
            jobs.c.attempt,
            typed("p_now", _L.created_at),
        )
        .where(*where)
        .order_by(jobs.c.id)
    )  # in job order, as the portable store logs them
    columns = [*_NODE_EVENT_COLUMNS.split(", "), _L.payload.name, _L.node_attempt.name, _L.created_at.name]
    return postgresql.insert(instance_logs).from_select(columns, rows).on_conflict_do_nothing().cte("started")


def started_payload_sql(jobs: str) -> str:
    """NODE_STARTED's payload as ``storage.log_rows.started_payload`` builds it, from a job CTE's row (the
    claim statements and the chain step share it: the rule's one SQL copy)."""
    return (
        f"jsonb_build_object('workerId', {jobs}.lease_owner) || CASE WHEN {jobs}.takeovers > 0"
        f" THEN jsonb_build_object('takeovers', {jobs}.takeovers) ELSE '{{}}'::jsonb END"
    )


def _claim_and_start(claim: Any) -> Any:
    """The claim statement, with the NODE_STARTED row of each job it leases (a data-modifying CTE)."""
    claimed = claim.cte("claimed")
    started = _started_rows(claimed)
    return sa.select(*(claimed.c[column.name] for column in JOB_COLUMNS), claimed.c.run_version).add_cte(started)


def _finish_run_logged() -> Any:
    """End a run with its RUN_STATUS row, and wake the ``workflow`` node waiting for it (a child run's
    caller, parked until the child ends: storage/children.py). One row: how many jobs it woke (0 or 1).

    Restates: ``StateTransaction.set_run_status`` (storage/state.py) with its RUN_STATUS row."""
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
        .returning(
            instances.c.id,
            instances.c.parent_instance_id,
            instances.c.parent_node_id,
            instances.c.parent_iteration,
        )
        .cte("finished")
    )
    columns = [name for name in LOG_VALUES if name not in (_L.node_id.name, _L.output_variable.name)]
    logged = postgresql.insert(instance_logs).from_select(
        columns,
        sa.select(
            finished.c.id,
            sa.literal(""),
            sa.literal(EventType.RUN_STATUS.value),
            typed("p_status", _L.node_status),
            typed("p_payload", _L.payload),
            typed("p_error", _L.error_message),
            sa.literal(0),
            typed("p_now", _L.created_at),
        ),
    )
    woken = (
        node_jobs.update()
        .where(
            node_jobs.c.instance_id == finished.c.parent_instance_id,
            node_jobs.c.node_id == finished.c.parent_node_id,
            node_jobs.c.iteration == finished.c.parent_iteration,
            node_jobs.c.lease_owner.is_(None),
            node_jobs.c.available_at > typed("p_now", node_jobs.c.available_at),
        )
        .values(available_at=typed("p_now", node_jobs.c.available_at))
        .returning(node_jobs.c.id)
        .cte("woken")
    )
    return sa.select(sa.func.count()).select_from(woken).add_cte(logged.cte("logged"))


def _end_step() -> Any:
    """A top-level end node's result decided in one statement: CAS the instance and, when the run is
    RUNNING, this node's job is still there and no other job is left, complete the run with the end
    nodes' outputs merged in log order (this one last, later keys winning) and its RUN_STATUS row;
    log NODE_COMPLETED and remove the job. The conditions are read before the CAS; the CAS's row lock
    and version check make them hold, since every change to a run's jobs is a decision that moves
    its version.

    One row: (status before, whether the run completed, the run output, the log id, the removed job).
    No row when the CAS failed or the result was logged before (nothing was written).

    Restates: ``Decision.record_completion`` then ``Decision.finish_if_done`` (engine/decision.py), the
    output merged as ``log_fold.merged_end_outputs`` merges it; offered by ``OneStatementSteps._end_step``.
    """
    running, completed = _q(RunStatus.RUNNING), _q(RunStatus.COMPLETED)
    return sa.text(
        f"""
WITH pre AS (
    SELECT i.status,
        (i.status = {running}
            AND EXISTS (SELECT 1 FROM node_jobs WHERE id = :p_job AND attempt = :p_attempt)
            AND NOT EXISTS (SELECT 1 FROM node_jobs WHERE instance_id = :p_instance_id AND id <> :p_job)
        ) AS finishing
    FROM instances i
    WHERE i.id = :p_instance_id AND i.version = :p_expected AND {_FITS}
        AND NOT EXISTS (
            SELECT 1 FROM instance_logs
            WHERE instance_id = :p_instance_id AND node_id = :p_node_id AND iteration = ''
                AND event_type = {_q(EventType.NODE_COMPLETED)} AND node_attempt = :p_attempt
        )
), earlier AS (
    SELECT COALESCE(jsonb_object_agg(kv.key, kv.value ORDER BY l.log_id), '{{}}'::jsonb) AS output
    FROM instance_logs l CROSS JOIN LATERAL jsonb_each(l.payload -> 'output') AS kv
    WHERE l.instance_id = :p_instance_id AND l.event_type = {_q(EventType.NODE_COMPLETED)} AND l.iteration = ''
        AND l.output_variable IS NOT NULL AND (l.payload ->> 'end') = 'true'
        AND jsonb_typeof(l.payload -> 'output') = 'object'
), cas AS (
    UPDATE instances i SET
        version = :p_next,
        {_ADD},
        updated_at = CAST(:p_now AS DOUBLE PRECISION),
        status = CASE WHEN pre.finishing THEN {completed} ELSE i.status END,
        completed_at = CASE WHEN pre.finishing THEN CAST(:p_now AS DOUBLE PRECISION) ELSE i.completed_at END,
        error = CASE WHEN pre.finishing THEN NULL ELSE i.error END,
        output = CASE WHEN pre.finishing
            THEN (SELECT output FROM earlier) || CAST(:p_end_output AS JSONB) ELSE i.output END
    FROM pre
    WHERE i.id = :p_instance_id AND i.version = :p_expected
    RETURNING pre.status AS before, pre.finishing, i.output
), logged AS (
    INSERT INTO instance_logs ({_RESULT_COLUMNS})
    SELECT CAST(:p_instance_id AS VARCHAR), CAST(:p_node_id AS VARCHAR), '', {_DONE},
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
    INSERT INTO instance_logs ({_names(_L.instance_id, _L.iteration, _L.event_type, _L.node_status, _L.payload)},
        {_names(_L.node_attempt, _L.created_at)})
    SELECT CAST(:p_instance_id AS VARCHAR), '', {_q(EventType.RUN_STATUS)}, {completed},
        CAST(:p_status_payload AS JSONB), 0, CAST(:p_now AS DOUBLE PRECISION)
    FROM cas
    WHERE cas.finishing
)
SELECT cas.before, cas.finishing, cas.output, (SELECT log_id FROM logged), (SELECT id FROM removed)
FROM cas
"""
    )


def _job_started(where: str = "") -> str:
    """The CTE ``started``: the NODE_STARTED row of the job a ``job`` CTE inserted leased (``where``: which)."""
    return f"""started AS (
    INSERT INTO instance_logs ({_NODE_EVENT_COLUMNS}, {_names(_L.payload, _L.node_attempt, _L.created_at)})
    SELECT instance_id, node_id, iteration, {_STARTED}, {started_payload_sql("job")}, attempt,
        CAST(:p_now AS DOUBLE PRECISION)
    FROM job {where}
    ON CONFLICT DO NOTHING
)"""


# Fragments of the one-statement decisions below. ``_LOGGED_RESULT`` (left open: the next CTE
# closes it) appends the node's NODE_COMPLETED row once the ``cas`` CTE succeeded;
# ``_LEASED_JOB_STARTED`` queues the ``dispatched`` node's job, leased to the deciding worker, and
# logs its NODE_STARTED row.
_LOGGED_RESULT = f""", logged AS (
    INSERT INTO instance_logs ({_RESULT_COLUMNS})
    SELECT CAST(:p_instance_id AS VARCHAR), CAST(:p_node_id AS VARCHAR), CAST(:p_iteration AS VARCHAR),
        {_DONE}, CAST(:p_output_variable AS VARCHAR), CAST(:p_payload AS JSONB),
        CAST(:p_attempt AS INTEGER), CAST(:p_now AS DOUBLE PRECISION)
    FROM cas
    ON CONFLICT DO NOTHING
    RETURNING log_id
"""
_LEASED_JOB_STARTED = f""", job AS (
    INSERT INTO node_jobs ({_NEW_JOB_COLUMNS})
    SELECT instance_id, node_id, iteration, 1, 1, CAST(:p_lease_until AS DOUBLE PRECISION),
        CAST(:p_owner AS VARCHAR), CAST(:p_now AS DOUBLE PRECISION), CAST(:p_tenant_id AS VARCHAR), 0,
        CAST(:p_priority AS INTEGER)
    FROM dispatched
    ON CONFLICT DO NOTHING
    RETURNING {_JOB_RETURNING}
), {_job_started()}"""
# The run's stored-output budget (storage/run_bytes.py): a step that would take the counter past it
# fails its CAS and writes nothing; the general decision then fails the node.
_FITS = charge_fits("i.output_bytes", ":p_charge", ":p_budget")
_ADD = add_charge("i.output_bytes", ":p_charge")
_DISPATCH_COLUMNS = f"{_NODE_EVENT_COLUMNS}, {_names(_L.node_attempt, _L.created_at)}"
_JOB_SELECTED = ", ".join(f"job.{column.name}" for column in JOB_COLUMNS)


def _iteration_step() -> Any:
    """The node that ends a loop iteration (a body node with no outgoing edge), decided in one statement.

    Taken only when the run is RUNNING, the node's job is still there, no other job of the loop's
    body is left in the iteration's scope (or scopes nested in it), and the loop does not finish
    with this iteration. Then: CAS, NODE_COMPLETED, the job removed, one more finished iteration and,
    when there is a next item (``finished + concurrency - 1``), the loop's body entry dispatched in that
    item's scope with its job leased to the worker and its NODE_STARTED row. This is what the general
    decision (``Decision.settle`` in engine/decision.py) writes in that case; the conditions are read before the CAS,
    whose row lock and version check keep them true (every change to jobs or loop counts is a decision).

    One row (status before, log id, then the next iteration's job columns or NULLs); no row when
    nothing was written (the general path then decides).

    Restates: ``Decision.record_completion`` then ``Decision.settle`` (engine/decision.py); offered by
    ``OneStatementSteps._iteration_step``.
    """
    return sa.text(
        f"""
WITH pre AS (
    SELECT i.status, ls.item_count, ls.finished + 1 AS finished,
        ls.finished + CAST(:p_concurrency AS INTEGER) AS next_index
    FROM instances i
    JOIN loop_states ls
        ON ls.instance_id = i.id AND ls.node_id = :p_loop_id AND ls.iteration = :p_parent
    WHERE i.id = :p_instance_id AND i.version = :p_expected AND i.status = {_q(RunStatus.RUNNING)} AND {_FITS}
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
                AND event_type = {_q(EventType.NODE_COMPLETED)} AND node_attempt = :p_attempt
        )
), cas AS (
    UPDATE instances i SET version = :p_next, {_ADD}, updated_at = CAST(:p_now AS DOUBLE PRECISION)
    FROM pre
    WHERE i.id = :p_instance_id AND i.version = :p_expected
        AND {ASYNC_COMMIT_SQL} = 'off'  -- early release: storage/pg_durability.py
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
    INSERT INTO instance_logs ({_DISPATCH_COLUMNS})
    SELECT CAST(:p_instance_id AS VARCHAR), CAST(:p_entry AS VARCHAR), iteration, {_DISPATCHED}, 1,
        CAST(:p_now AS DOUBLE PRECISION)
    FROM next_scope
    ON CONFLICT DO NOTHING
    RETURNING instance_id, node_id, iteration
){_LEASED_JOB_STARTED}
SELECT cas.status, (SELECT log_id FROM logged), {_JOB_SELECTED}
FROM cas LEFT JOIN job ON TRUE
"""
    )


def _start_run() -> Any:
    """A production run created in one statement: the instance, its INPUT_SET and RUN_STATUS rows, and
    its start node's NODE_DISPATCHED row and job, as the general path writes them: due now, or with
    ``p_owner`` leased to that worker until ``p_available_at``, with its NODE_STARTED row. Only a run
    without flow control takes it (engine/orchestrator.py), so its job has the default priority. Returns
    the job's row; none, having written nothing, when ``p_check_latest`` and the workflow's latest version
    is not ``p_workflow_version`` (as ``storage/workflows.py`` reads it: the tenant's, not deleted).

    The job's insert reads the whole of ``logged`` (a count) so that the log rows keep the portable path's
    order: the run's rows, NODE_DISPATCHED, then NODE_STARTED.

    Restates: ``Orchestrator.start_run`` (engine/orchestrator.py) through ``StateTransaction.create_instance``
    and ``Decision.dispatch`` with ``claim``."""
    i = instances.c
    created = _names(i.id, i.tenant_id, i.workflow_id, i.workflow_version, i.is_test, i.status, i.version)
    created += ", " + _names(i.trigger, i.input, i.created_at, i.started_at, i.updated_at, i.deadline_at)
    created += ", " + _names(i.requested_by)
    logged = _names(_L.instance_id, _L.node_id, _L.iteration, _L.event_type, _L.node_status, _L.payload)
    logged += ", " + _names(_L.node_attempt, _L.created_at)
    return sa.text(
        f"""
WITH instance AS (
    INSERT INTO instances ({created})
    SELECT CAST(:p_id AS VARCHAR), CAST(:p_tenant_id AS VARCHAR), CAST(:p_workflow_id AS VARCHAR),
        CAST(:p_workflow_version AS INTEGER), false, {_q(RunStatus.RUNNING)}, 1, CAST(:p_trigger AS VARCHAR),
        CAST(:p_input AS JSONB), CAST(:p_now AS DOUBLE PRECISION), CAST(:p_now AS DOUBLE PRECISION),
        CAST(:p_now AS DOUBLE PRECISION), CAST(:p_deadline AS DOUBLE PRECISION),
        CAST(:p_requested_by AS VARCHAR)
    WHERE NOT CAST(:p_check_latest AS BOOLEAN) OR EXISTS (
        SELECT 1 FROM workflows
        WHERE workflows.id = :p_workflow_id AND workflows.tenant_id = :p_tenant_id
            AND workflows.latest_version = :p_workflow_version AND workflows.deleted_at IS NULL
    )
    RETURNING id
), logged AS (
    INSERT INTO instance_logs ({logged})
    SELECT id, NULL, '', {_q(EventType.INPUT_SET)}, NULL, CAST(:p_input_payload AS JSONB), 0,
        CAST(:p_now AS DOUBLE PRECISION)
    FROM instance
    UNION ALL
    SELECT id, NULL, '', {_q(EventType.RUN_STATUS)}, {_q(RunStatus.RUNNING)}, CAST(:p_status_payload AS JSONB), 0,
        CAST(:p_now AS DOUBLE PRECISION)
    FROM instance
    UNION ALL
    SELECT id, CAST(:p_start_id AS VARCHAR), '', {_DISPATCHED}, NULL, 1, CAST(:p_now AS DOUBLE PRECISION)
    FROM instance
    RETURNING log_id
), job AS (
    INSERT INTO node_jobs ({_NEW_JOB_COLUMNS})
    SELECT id, CAST(:p_start_id AS VARCHAR), '', 1, 1, CAST(:p_available_at AS DOUBLE PRECISION),
        CAST(:p_owner AS VARCHAR), CAST(:p_now AS DOUBLE PRECISION), CAST(:p_tenant_id AS VARCHAR), 0,
        {DEFAULT_PRIORITY}
    FROM instance, (SELECT count(*) FROM logged) AS written
    RETURNING {_JOB_RETURNING}
), {_job_started("WHERE job.lease_owner IS NOT NULL")}
SELECT {_JOB_SELECTED} FROM job
"""
    )


@functools.cache
def postgres_statements() -> PostgresStatements:
    """PostgreSQL's single statements, compiled for asyncpg."""

    def c(statement: Any, json_names: tuple[str, ...], returns_rows: bool | None = None) -> Any:
        return compile_statement(statement, is_sqlite=False, json_names=json_names, returns_rows=returns_rows)

    return PostgresStatements(
        finish_run_logged=c(_finish_run_logged(), ("p_output", "p_payload")),
        record_result=c(_record_result(), ("p_payload",)),
        dispatch_one=c(_dispatch_one(), ("p_payload",)),
        claim_and_start=c(_claim_and_start(statements_for(is_sqlite=False).claim_jobs.core), ("p_held",)),
        claim_one_and_start=c(_claim_and_start(statements_for(is_sqlite=False).claim_one_tenant.core), ()),
        claim_aged_and_start=c(_claim_and_start(statements_for(is_sqlite=False).claim_jobs_aged.core), ("p_held",)),
        claim_one_aged_and_start=c(_claim_and_start(statements_for(is_sqlite=False).claim_one_tenant_aged.core), ()),
        start_run=c(_start_run(), ("p_input", "p_input_payload", "p_status_payload"), returns_rows=True),
        end_step=c(_end_step(), ("p_payload", "p_end_output", "p_status_payload"), returns_rows=True),
        iteration_step=c(_iteration_step(), ("p_payload",), returns_rows=True),
    )
