"""The chain step on PostgreSQL, in one statement for any number of runs: group commit across runs
(issue 15; the batches are storage/step_batches.py's). This is the only SQL of the chain step:
``_chain_steps`` writes it once, over a batch's rows (array parameters) or over a lone run's one row
(scalar parameters, which PostgreSQL plans as index probes).

A chain step is one run's decision: CAS the instance, log the node's NODE_COMPLETED, remove its job
and, when the run is RUNNING and the job was still there, dispatch the successor with its job leased
to the worker and its NODE_STARTED row; each part only if the one before it wrote.

Restates: ``Decision.record_completion`` then ``Decision.advance`` and ``Decision.dispatch``
(engine/decision.py) for a node whose sole successor it alone feeds (``scheduling.sole_successor``),
the budget check of ``storage/run_bytes.py``, and the NODE_STARTED payload of
``log_rows.started_payload``; offered by ``OneStatementSteps._chain_step`` (engine/one_statement.py).
tests/integration/test_generated_equivalence.py compares what it writes, alone and batched, with
what the portable decision writes on SQLite and PostgreSQL.

``_chain_steps`` takes a batch of steps as a set: every part joins the batch's rows, so each row's
compare-and-swap decides for its own run only (a run whose CAS fails, or whose step would go past its
output budget, gets no row in ``cas``, writes nothing, and the others go on; its step then returns no
status and the general decision takes it).
"""

from __future__ import annotations

import asyncio
import operator
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final

import sqlalchemy as sa

from flowdeck.domain.statuses import EventType, NodeStatus, RunStatus
from flowdeck.storage.compiled import compile_statement
from flowdeck.storage.database import Database
from flowdeck.storage.pg_durability import ASYNC_COMMIT_SQL
from flowdeck.storage.records import Job
from flowdeck.storage.run_bytes import add_charge, charge_fits
from flowdeck.storage.statements import JOB_COLUMNS, JOB_INSERT_COLUMNS
from flowdeck.storage.statements_postgres import started_payload_sql
from flowdeck.storage.steps import ChainStep, ChainStepInput

__all__ = ("PostgresChainSteps",)


def _q(value: Any) -> str:
    return f"'{value.value}'"


_JOBS = ", ".join(JOB_INSERT_COLUMNS)
_JOB_OUT = ", ".join(column.name for column in JOB_COLUMNS)
_JOB_SELECTED = ", ".join(f"job.{column.name}" for column in JOB_COLUMNS)

_STEP_COLUMNS: Final = (
    ("instance_id", "p_instance_ids", "VARCHAR", "job.instance_id"),
    ("expected", "p_expected", "INTEGER", "expected_version"),
    ("node_id", "p_node_ids", "VARCHAR", "job.node_id"),
    ("iteration", "p_iterations", "VARCHAR", "job.iteration"),
    ("attempt", "p_attempts", "INTEGER", "job.attempt"),
    ("job", "p_jobs", "BIGINT", "job.id"),
    ("output_variable", "p_output_variables", "VARCHAR", "output_variable"),
    ("successor", "p_successors", "VARCHAR", "successor"),
    ("owner", "p_owners", "VARCHAR", "owner"),
    ("tenant_id", "p_tenant_ids", "VARCHAR", "job.tenant_id"),
    ("lease_seconds", "p_lease_seconds", "DOUBLE PRECISION", "lease_seconds"),
    ("charge", "p_charges", "BIGINT", "charge"),
    ("budget", "p_budgets", "BIGINT", "budget"),
    ("priority", "p_priorities", "INTEGER", "job.priority"),
)
"""A step's columns in ``input``: (column, parameter, type, the ``ChainStepInput`` attribute it comes from);
and ``n``, its place in the batch, and ``payload``."""

_PARAMS: Final = (*(param for _, param, _, _ in _STEP_COLUMNS), "p_payloads")
"""The statement's parameters but ``p_now``, in the order ``_values`` gives a step's."""

_values: Final = operator.attrgetter(*(attribute for *_, attribute in _STEP_COLUMNS), "payload")
"""A step's parameters, in ``_PARAMS`` order."""

_CASTS: Final = {column: f"CAST(:{param} AS {sql_type})" for column, param, sql_type, _ in _STEP_COLUMNS}


@dataclass(frozen=True, slots=True)
class _Rows:
    """Where the statement takes its steps from: ``source``, the body of ``input``; ``key``, the SQL of a
    step's column where the statement looks rows up by it."""

    source: str
    key: Callable[[str], str]


_MANY = _Rows(
    source=f"""
    SELECT t.*, p.payload
    FROM unnest({", ".join(f"CAST(:{param} AS {sql_type}[])" for _, param, sql_type, _ in _STEP_COLUMNS)})
        WITH ORDINALITY AS t({", ".join(column for column, *_ in _STEP_COLUMNS)}, n)
    JOIN jsonb_array_elements(CAST(:p_payloads AS JSONB)) WITH ORDINALITY AS p(payload, n) ON p.n = t.n
""",
    key=lambda column: f"input.{column}",
)
"""A batch: the parameters are arrays, a step per element, joined to ``input`` by each lookup."""

_ONE = _Rows(
    source=f"""
    SELECT {", ".join(f"{cast} AS {column}" for column, cast in _CASTS.items())}, 1 AS n,
        CAST(:p_payloads AS JSONB) AS payload
""",
    key=_CASTS.__getitem__,
)
"""A lone step (most steps, unless the database is busy): the same parameters, each a scalar, and the
lookups compare with them directly. PostgreSQL then plans every lookup as an index probe whatever it
knows of the tables' sizes (with ``input`` joined, a plan made while a table was small went on reading
all of it), and runs the statement in about half the time of a batch of one (docs/benchmarks.md)."""


def _chain_steps(rows: _Rows) -> str:
    key = rows.key
    return f"""
WITH input AS ({rows.source}), cas AS (
    UPDATE instances SET version = input.expected + 1, {add_charge("instances.output_bytes", "input.charge")},
        updated_at = CAST(:p_now AS DOUBLE PRECISION)
    FROM input
    WHERE instances.id = {key("instance_id")} AND instances.version = {key("expected")}
        AND {charge_fits("instances.output_bytes", key("charge"), key("budget"))}
        AND {ASYNC_COMMIT_SQL} = 'off'  -- early release: storage/pg_durability.py
        AND NOT EXISTS (  -- a duplicate delivery leaves even the version alone (the general path sees it)
            SELECT 1 FROM instance_logs
            WHERE instance_logs.instance_id = {key("instance_id")} AND instance_logs.node_id = {key("node_id")}
                AND instance_logs.iteration = {key("iteration")}
                AND instance_logs.event_type = {_q(EventType.NODE_COMPLETED)}
                AND instance_logs.node_attempt = {key("attempt")}
        )
    RETURNING instances.id, instances.status
), logged AS (
    INSERT INTO instance_logs (instance_id, node_id, iteration, event_type, node_status, output_variable, payload,
        node_attempt, created_at)
    SELECT input.instance_id, input.node_id, input.iteration, {_q(EventType.NODE_COMPLETED)},
        {_q(NodeStatus.COMPLETED)}, input.output_variable, input.payload, input.attempt,
        CAST(:p_now AS DOUBLE PRECISION)
    FROM input JOIN cas ON cas.id = input.instance_id
    ORDER BY input.n
    ON CONFLICT DO NOTHING
    RETURNING instance_id, log_id
), removed AS (
    DELETE FROM node_jobs USING input, logged
    WHERE node_jobs.id = {key("job")} AND node_jobs.attempt = {key("attempt")}
        AND logged.instance_id = input.instance_id
    RETURNING node_jobs.id, node_jobs.instance_id
), dispatched AS (
    INSERT INTO instance_logs (instance_id, node_id, iteration, event_type, node_status, node_attempt, created_at)
    SELECT input.instance_id, input.successor, input.iteration, {_q(EventType.NODE_DISPATCHED)},
        {_q(NodeStatus.DISPATCHED)}, 1, CAST(:p_now AS DOUBLE PRECISION)
    FROM input
        JOIN removed ON removed.instance_id = input.instance_id
        JOIN cas ON cas.id = input.instance_id
    WHERE cas.status = {_q(RunStatus.RUNNING)}
    ORDER BY input.n
    ON CONFLICT DO NOTHING
    RETURNING instance_id, node_id, iteration
), job AS (
    INSERT INTO node_jobs ({_JOBS})
    SELECT dispatched.instance_id, dispatched.node_id, dispatched.iteration, 1, 1,
        CAST(:p_now AS DOUBLE PRECISION) + input.lease_seconds, input.owner,
        CAST(:p_now AS DOUBLE PRECISION), input.tenant_id, 0, input.priority
    FROM dispatched JOIN input ON input.instance_id = dispatched.instance_id
    ON CONFLICT DO NOTHING
    RETURNING {_JOB_OUT}
), started AS (
    INSERT INTO instance_logs (instance_id, node_id, iteration, event_type, node_status, payload, node_attempt,
        created_at)
    SELECT instance_id, node_id, iteration, {_q(EventType.NODE_STARTED)}, {_q(NodeStatus.RUNNING)},
        {started_payload_sql("job")}, attempt, CAST(:p_now AS DOUBLE PRECISION)
    FROM job
    ORDER BY job.id
    ON CONFLICT DO NOTHING
)
SELECT input.n, cas.status, logged.log_id, removed.id, {_JOB_SELECTED}
FROM input
    LEFT JOIN cas ON cas.id = input.instance_id
    LEFT JOIN logged ON logged.instance_id = input.instance_id
    LEFT JOIN removed ON removed.instance_id = input.instance_id
    LEFT JOIN job ON job.instance_id = input.instance_id
ORDER BY input.n
"""


_MANY_STATEMENT = compile_statement(
    sa.text(_chain_steps(_MANY)), is_sqlite=False, json_names=("p_payloads",), returns_rows=True
)
_ONE_STATEMENT = compile_statement(
    sa.text(_chain_steps(_ONE)), is_sqlite=False, json_names=("p_payloads",), returns_rows=True
)


class PostgresChainSteps:
    """Sends a batch of chain steps (``ChainStepBatcher``'s ``send``): one statement, whatever its size."""

    def __init__(self, db: Database, clock: Callable[[], float] = time.time) -> None:
        self.db = db
        self.clock = clock

    async def send(self, steps: list[ChainStepInput]) -> list[ChainStep]:
        """A lone step takes the statement over one row (scalar parameters), a batch over its rows (arrays)."""
        now = self.clock()
        if len(steps) == 1:
            statement, params = _ONE_STATEMENT, dict(zip(_PARAMS, _values(steps[0]), strict=True))
        else:
            columns = zip(*map(_values, steps), strict=True)
            statement, params = _MANY_STATEMENT, {name: list(c) for name, c in zip(_PARAMS, columns, strict=True)}
        async with self.db.autocommit(early_release=True) as conn:
            rows = (await conn.execute(statement, {**params, "p_now": now})).all()
        return [_step(now, conn.committed, *row[1:]) for row in rows]


def _step(
    now: float,
    committed: asyncio.Future[None] | None,
    status: str | None,
    log_id: int | None,
    removed: int | None,
    *job_columns: Any,
) -> ChainStep:
    next_job = None if job_columns[0] is None else Job(*job_columns)
    run_status = None if status is None else RunStatus(status)
    return ChainStep(now, run_status, log_id is not None, removed is not None, next_job, committed)
