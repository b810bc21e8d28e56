"""Branches of a fan-out decided together in one transaction write the run's byte counter and their join's
barrier once per transaction, not once per branch (storage/held_counters.py), with the same rows in the end:
the join runs once, on every branch, and the budget still refuses the one branch that would pass it.
Both databases."""

from __future__ import annotations

import asyncio
import contextlib
from collections import Counter
from collections.abc import AsyncIterator
from typing import Any

import pytest
import sqlalchemy as sa

from flowdeck.engine.engine import Engine
from flowdeck.engine.run_limits import RunLimits
from flowdeck.storage.database import Database
from flowdeck.storage.run_bytes import charge_fits, fits, json_size
from flowdeck.storage.tables import instances, join_barriers
from tests.support.graphs import definition, edge, end, node
from tests.support.handlers import make_test_registry
from tests.support.runs import read_outcome

WIDTH = 12


def _fan_in(output: Any = None) -> dict[str, Any]:
    """start -> b1..b12 -> join -> end, each branch returning ``output`` (or its default)."""
    config = {} if output is None else {"output": output}
    branches = [node(f"b{i}", config=config) for i in range(1, WIDTH + 1)]
    edges = [edge("start", b["id"]) for b in branches] + [edge(b["id"], "join") for b in branches]
    return definition([node("start", "start"), *branches, node("join"), end()], [*edges, edge("join", "end")])


class _CountedConnection:
    def __init__(self, conn: Any, counts: Counter[str]) -> None:
        self._conn = conn
        self._counts = counts

    async def execute(self, statement: Any, parameters: Any = None) -> Any:
        sql = str(getattr(statement, "sql", statement))
        if "SET output_bytes" in sql:
            self._counts["charges"] += 1
        if "join_barriers" in sql:
            self._counts["barrier writes"] += 1
        return await self._conn.execute(statement, parameters)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._conn, name)


def _count_statements(db: Database, monkeypatch: pytest.MonkeyPatch) -> Counter[str]:
    counts: Counter[str] = Counter()
    transaction = db.transaction

    @contextlib.asynccontextmanager
    async def counted(**options: Any) -> AsyncIterator[Any]:
        async with transaction(**options) as conn:
            counts["transactions"] += 1
            yield _CountedConnection(conn, counts)

    monkeypatch.setattr(db, "transaction", counted)
    return counts


async def _deliver_branches_together(engine: Engine, d: dict[str, Any], db: Database, monkeypatch: Any) -> tuple:
    """Runs ``d`` up to its branches, then delivers the twelve branch results at once; the statement counts of
    those deliveries and the run's id."""
    tenant_id = await engine.tenants.ensure("acme")
    workflow = await engine.create_workflow(tenant_id, d)
    run_id = await engine.start_workflow_run(tenant_id, workflow.id)
    [start] = await engine.state.claim_jobs("driver", 1, 60.0)
    await engine.orchestrator.handle_result(start, (await engine.executor.run(start))[0])
    branches = await engine.state.claim_jobs("driver", WIDTH, 60.0)
    assert sorted(job.node_id for job in branches) == sorted(f"b{i}" for i in range(1, WIDTH + 1))
    outcomes = [(await engine.executor.run(job))[0] for job in branches]
    counts = _count_statements(db, monkeypatch)
    await asyncio.gather(*(engine.orchestrator.handle_result(j, o) for j, o in zip(branches, outcomes, strict=True)))
    monkeypatch.undo()
    return counts, run_id


async def _row(db: Database, table: sa.Table, *columns: str, **where: str) -> tuple[Any, ...]:
    async with db.read() as conn:
        query = sa.select(*(table.c[c] for c in columns)).where(*(table.c[k] == v for k, v in where.items()))
        return tuple((await conn.execute(query)).one())


@pytest.fixture
async def driven(db: Database) -> AsyncIterator[Engine]:
    """An engine whose jobs only the test claims and runs."""
    engine = Engine(db, make_test_registry(), lease_seconds=60.0, limits=RunLimits(max_run_bytes=100_000))
    await engine.start(with_worker=False)
    yield engine
    await engine.stop()


async def test_branches_decided_together_write_the_counters_once_per_transaction(
    driven: Engine, db: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    counts, run_id = await _deliver_branches_together(driven, _fan_in(), db, monkeypatch)
    assert counts["transactions"] < WIDTH  # the batcher took most of them together
    assert counts["charges"] == counts["transactions"]
    assert counts["barrier writes"] <= 2 * counts["transactions"]  # the first bump reads, one add at the end
    assert await _row(db, join_barriers, "resolved_edges", "taken_edges", instance_id=run_id, node_id="join") == (
        WIDTH,
        WIDTH,
    )
    outcome = await read_outcome(driven, run_id)
    assert all(outcome.count("NODE_COMPLETED", f"b{i}") == 1 for i in range(1, WIDTH + 1))
    assert outcome.count("NODE_DISPATCHED", "join") == 1  # once, when the last branch resolved its edge
    (counted,) = await _row(db, instances, "output_bytes", id=run_id)
    outputs = [r.payload["output"] for r in outcome.rows if r.event_type == "NODE_COMPLETED"]
    assert len(outputs) == WIDTH + 1 and counted == sum(json_size(output) for output in outputs)


async def test_the_branch_past_the_budget_fails_when_decided_together(
    driven: Engine, db: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    blob = "x" * 30_000  # 30,002 bytes stored: three fit in 100,000
    _, run_id = await _deliver_branches_together(driven, _fan_in(blob), db, monkeypatch)
    outcome = await read_outcome(driven, run_id)
    completed = [r.node_id for r in outcome.rows if r.event_type == "NODE_COMPLETED" and r.node_id != "start"]
    failed = [r for r in outcome.rows if r.event_type == "NODE_FAILED"]
    assert len(completed) == 3 and failed
    assert failed[0].payload["error"]["type"] == "RunOutputBudgetExceeded"
    assert outcome.run.status == "FAILED" and "FLOWDECK_MAX_RUN_BYTES" in (outcome.run.error or "")
    (counted,) = await _row(db, instances, "output_bytes", id=run_id)
    start_output = next(r.payload["output"] for r in outcome.rows if r.event_type == "NODE_COMPLETED")
    assert counted == 3 * json_size(blob) + json_size(start_output) <= 100_000


@pytest.mark.parametrize(
    ("counter", "charge", "budget"),
    [
        (0, 0, 0),
        (99, 1, 100),
        (100, 1, 100),
        (100, 0, 100),
        (101, -1, 100),
        (101, -2, 100),
        (5, -5, 0),
        (2**40, 1, 2**40),
    ],
)
async def test_the_budget_rule_in_python_is_the_sql_one(db: Database, counter: int, charge: int, budget: int) -> None:
    rule = charge_fits("CAST(:p_counter AS BIGINT)", ":p_charge", ":p_budget")
    async with db.read() as conn:
        params = {"p_counter": counter, "p_charge": charge, "p_budget": budget}
        in_sql = (await conn.execute(sa.text(f"SELECT CASE WHEN {rule} THEN 1 ELSE 0 END"), params)).scalar_one()
    assert fits(counter, charge, budget) is bool(in_sql)
