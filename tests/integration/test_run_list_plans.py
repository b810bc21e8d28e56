"""Every run-list query, and a run's detail, reads through an index: ``EXPLAIN`` shows no sequential scan
of ``instances``, ``run_labels`` or ``instance_logs`` (PostgreSQL with ``enable_seqscan = off``, so the
plan shows what the planner *can* use; SQLite's ``EXPLAIN QUERY PLAN``, which has no statistics to lean on).

The latency of the same queries at a million runs is ``flowdeck bench --history`` (docs/benchmarks.md).
"""

from __future__ import annotations

import re
import time
import uuid
from typing import Any

import pytest
import sqlalchemy as sa

from flowdeck.domain.statuses import RunStatus
from flowdeck.storage.database import Database
from flowdeck.storage.log_rows import log_page
from flowdeck.storage.run_labels import labels_statement
from flowdeck.storage.run_queries import RunFilter, list_statement, run_statement
from flowdeck.storage.tables import instance_logs, instances, run_labels, tenants

TENANT = "tenant-plans"
NOW = time.time()
PARENT = "parent-run"

FILTERS: dict[str, RunFilter] = {
    "first page": RunFilter(),
    "status": RunFilter(status=RunStatus.FAILED),
    "workflow": RunFilter(workflow_id="wf-1"),
    "trigger": RunFilter(trigger="webhook"),
    "production": RunFilter(is_test=False),
    "test": RunFilter(is_test=True),
    "date range": RunFilter(created_from=NOW - 500, created_to=NOW - 100),
    "id prefix": RunFilter(id_prefix="ab"),
    "caller": RunFilter(parent_instance_id=PARENT),
    "label": RunFilter(labels=(("customer", "acme"),)),
    "two labels": RunFilter(labels=(("customer", "acme"), ("region", "eu"))),
    "label and status": RunFilter(labels=(("customer", "acme"),), status=RunStatus.COMPLETED),
    "label and date": RunFilter(labels=(("customer", "acme"),), created_from=NOW - 500),
    "workflow and status": RunFilter(workflow_id="wf-1", status=RunStatus.FAILED),
    "status and trigger": RunFilter(status=RunStatus.COMPLETED, trigger="api"),
    "status and date": RunFilter(status=RunStatus.FAILED, created_from=NOW - 500, created_to=NOW),
    "workflow, test and date": RunFilter(workflow_id="wf-2", is_test=True, created_to=NOW - 10),
    "id prefix and status": RunFilter(id_prefix="ab", status=RunStatus.FAILED),
}
TABLES = ("instances", "run_labels", "instance_logs")


async def _seed(db: Database, runs: int = 3000) -> str:
    statuses = [RunStatus.COMPLETED.value] * 8 + [RunStatus.FAILED.value, RunStatus.RUNNING.value]
    rows: list[dict[str, Any]] = []
    labels: list[dict[str, Any]] = []
    for i in range(runs):
        run_id = str(uuid.uuid4())
        created = NOW - i
        rows.append(
            {
                "id": run_id,
                "tenant_id": TENANT,
                "workflow_id": f"wf-{i % 7}",
                "workflow_version": 1,
                "is_test": i % 5 == 0,
                "status": statuses[i % len(statuses)],
                "version": 3,
                "trigger": ("api", "webhook", "schedule", "workflow")[i % 4],
                "created_at": created,
                "started_at": created,
                "updated_at": created,
                "parent_instance_id": PARENT if i % 50 == 0 else None,
            }
        )
        labels.append(
            {
                "instance_id": run_id,
                "name": "customer",
                "tenant_id": TENANT,
                "value": f"c{i % 40}" if i % 3 else "acme",
                "created_at": created,
            }
        )
        if i % 2:
            labels.append(
                {"instance_id": run_id, "name": "region", "tenant_id": TENANT, "value": "eu", "created_at": created}
            )
    logs = [
        {"instance_id": rows[j // 5]["id"], "node_id": f"n{j % 5}", "event_type": "NODE_COMPLETED", "created_at": NOW}
        for j in range(5 * runs)
    ]
    async with db.transaction() as conn:
        await conn.execute(tenants.insert().values(id=TENANT, name=TENANT, created_at=NOW))
        await conn.execute(instances.insert(), rows)
        await conn.execute(run_labels.insert(), labels)
        await conn.execute(instance_logs.insert(), logs)
    async with db.transaction() as conn:
        await conn.execute(sa.text("ANALYZE"))
    return str(rows[1000]["id"])


async def _plan(db: Database, stmt: sa.Select[Any]) -> list[str]:
    async with db.read() as conn:
        dialect = conn_dialect(db)
        sql = str(stmt.compile(dialect=dialect, compile_kwargs={"literal_binds": True}))
        if db.is_sqlite:
            rows = (await conn.execute(sa.text(f"EXPLAIN QUERY PLAN {sql}"))).all()
            return [str(row[-1]) for row in rows]
        await conn.execute(sa.text("SET LOCAL enable_seqscan = off"))
        return [str(row[0]) for row in (await conn.execute(sa.text(f"EXPLAIN {sql}"))).all()]


def conn_dialect(db: Database) -> sa.Dialect:
    from sqlalchemy.dialects import postgresql, sqlite

    return sqlite.dialect() if db.is_sqlite else postgresql.dialect()  # type: ignore[no-any-return]


def _table_scans(db: Database, plan: list[str]) -> list[str]:
    """The plan's lines that read a whole table (or, on SQLite, a whole index) instead of searching one."""
    if db.is_sqlite:
        return [line for line in plan if re.match(r"\s*SCAN (instances|run_labels|instance_logs|label_\d+)\b", line)]
    return [line for line in plan if re.search(r"Seq Scan on (instances|run_labels|instance_logs)\b", line)]


@pytest.fixture
async def seeded(db: Database) -> str:
    return await _seed(db)


async def test_each_list_query_reads_through_an_index(db: Database, seeded: str) -> None:
    bad: dict[str, list[str]] = {}
    for name, filters in FILTERS.items():
        for page, after in (("first page", None), ("later page", (NOW - 200.0, "8" * 36))):
            plan = await _plan(db, list_statement(TENANT, filters, after, 51))
            # SQLite: "USE TEMP B-TREE FOR RIGHT PART OF ORDER BY" only orders runs created in the same
            # instant by id; a full "FOR ORDER BY" would sort every match.
            sorts = [line for line in plan if "TEMP B-TREE FOR ORDER BY" in line]
            if _table_scans(db, plan) or (sorts and "id prefix" not in name and "caller" not in name):
                bad[f"{name}, {page}"] = plan
    assert not bad, "\n\n".join(f"{name}:\n" + "\n".join(plan) for name, plan in bad.items())


async def test_a_run_s_detail_reads_through_indexes(db: Database, seeded: str) -> None:
    for stmt in (run_statement(TENANT, seeded), log_page(seeded), log_page(seeded, 3, 50), labels_statement([seeded])):
        plan = await _plan(db, stmt)
        assert not _table_scans(db, plan), "\n".join(plan)
