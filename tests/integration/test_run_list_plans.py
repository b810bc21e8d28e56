"""Every run-list query, a run's detail and the pruner's reads go through an index: ``EXPLAIN`` shows no sequential scan
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
from sqlalchemy.dialects import postgresql, sqlite

from flowdeck.domain.statuses import RunStatus
from flowdeck.storage.database import Database
from flowdeck.storage.log_rows import log_page
from flowdeck.storage.retention import Cursor, Cutoffs, candidates_statement, due_statement
from flowdeck.storage.run_labels import labels_statement
from flowdeck.storage.run_queries import RunFilter, count_statement, list_statement, run_statement
from flowdeck.storage.tables import instance_logs, instances, run_labels, tenants

TENANT = "tenant-plans"
NOW = time.time()
PARENT = "parent-run"

_BY_TIME = "ix_instances_tenant_id_created_at_id"
_LABEL = "ix_run_labels_tenant_name_value_created"
# Each filter, and the index that answers it on SQLite (which keeps no statistics, so the choice is
# the query's and the indexes' shapes, never the data's); PostgreSQL chooses by its statistics.
FILTERS: dict[str, tuple[RunFilter, str]] = {
    "first page": (RunFilter(), _BY_TIME),
    "status": (RunFilter(status=RunStatus.FAILED), "ix_instances_tenant_id_status_created_at_id"),
    "workflow": (RunFilter(workflow_id="wf-1"), "ix_instances_tenant_id_workflow_id_created_at_id"),
    "trigger": (RunFilter(trigger="webhook"), "ix_instances_tenant_id_trigger_created_at_id"),
    "production": (RunFilter(is_test=False), "ix_instances_tenant_id_is_test_created_at_id"),
    "test": (RunFilter(is_test=True), "ix_instances_tenant_id_is_test_created_at_id"),
    "date range": (RunFilter(created_from=NOW - 500, created_to=NOW - 100), _BY_TIME),
    "short id prefix": (RunFilter(id_prefix="ab"), _BY_TIME),
    "id prefix": (RunFilter(id_prefix="abcd"), "sqlite_autoindex_instances_1"),
    "caller": (RunFilter(parent_instance_id=PARENT), "ix_instances_parent_instance_id_created_at_id"),
    "label": (RunFilter(labels=(("customer", "acme"),)), _LABEL),
    "two labels": (RunFilter(labels=(("customer", "acme"), ("region", "eu"))), _LABEL),
    "label and status": (RunFilter(labels=(("customer", "acme"),), status=RunStatus.COMPLETED), _LABEL),
    "label and date": (RunFilter(labels=(("customer", "acme"),), created_from=NOW - 500), _LABEL),
    "workflow and status": (
        RunFilter(workflow_id="wf-1", status=RunStatus.FAILED),
        "ix_instances_tenant_id_workflow_id_status_created_at_id",
    ),
    "workflow and test": (
        RunFilter(workflow_id="wf-2", is_test=True),
        "ix_instances_tenant_id_workflow_id_is_test_created_at_id",
    ),
    "workflow, status and test": (
        RunFilter(workflow_id="wf-2", is_test=True, status=RunStatus.COMPLETED, created_to=NOW - 10),
        "ix_instances_tenant_id_workflow_id_",
    ),
    "status and trigger": (
        RunFilter(status=RunStatus.COMPLETED, trigger="api"),
        "ix_instances_tenant_id_",  # status or trigger: either has one equality column
    ),
    "status and date": (
        # The status's index, or (SQLite's pick on a later page, where the date range and the cursor both
        # bound it) the tenant's time index: either reads only the range, newest first.
        RunFilter(status=RunStatus.FAILED, created_from=NOW - 500, created_to=NOW),
        "ix_instances_tenant_id_",
    ),
    "id prefix and status": (RunFilter(id_prefix="abcdef", status=RunStatus.FAILED), "sqlite_autoindex_instances_1"),
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
    if not db.is_sqlite:  # Flowdeck never runs ANALYZE on SQLite: its planner goes by the indexes alone
        async with db.transaction() as conn:
            await conn.execute(sa.text("ANALYZE"))
    return str(rows[1000]["id"])


async def _plan(db: Database, stmt: sa.Select[Any]) -> list[str]:
    """The plan of the statement as it runs. On SQLite with its parameters bound, not written in: the planner
    may choose otherwise for literals (50 ids in an ``IN`` took a status index with ``?``s, the primary key
    with literals)."""
    async with db.read() as conn:
        if db.is_sqlite:
            compiled = stmt.compile(dialect=sqlite.dialect(), compile_kwargs={"render_postcompile": True})
            values = compiled.construct_params()
            bound = tuple(values[name] for name in compiled.positiontup or ())
            rows = await conn.run_sync(lambda c: c.exec_driver_sql(f"EXPLAIN QUERY PLAN {compiled}", bound).all())
            return [str(row[-1]) for row in rows]
        sql = str(stmt.compile(dialect=postgresql.dialect(), compile_kwargs={"literal_binds": True}))
        await conn.execute(sa.text("SET LOCAL enable_seqscan = off"))
        return [str(row[0]) for row in (await conn.execute(sa.text(f"EXPLAIN {sql}"))).all()]


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
    for name, (filters, index) in FILTERS.items():
        for page, after in (("first page", None), ("later page", (NOW - 200.0, "8" * 36))):
            plan = await _plan(db, list_statement(TENANT, filters, after, 51))
            if _table_scans(db, plan):
                bad[f"{name}, {page}"] = plan
            elif db.is_sqlite:
                # The first access is the filter's own index; and only a handful (a caller's runs, an id
                # prefix's) is ever sorted: otherwise the page is read in order and the read stops there.
                sorted_all = any("TEMP B-TREE" in line for line in plan) and index != "sqlite_autoindex_instances_1"
                if index not in plan[0] or (sorted_all and "caller" not in name):
                    bad[f"{name}, {page} (expected {index})"] = plan
    assert not bad, "\n\n".join(f"{name}:\n" + "\n".join(plan) for name, plan in bad.items())


async def test_each_count_reads_through_an_index(db: Database, seeded: str) -> None:
    bad = {}
    for name, (filters, _) in FILTERS.items():
        plan = await _plan(db, count_statement(TENANT, filters))
        if _table_scans(db, plan):
            bad[name] = plan
    assert not bad, "\n\n".join(f"{name}:\n" + "\n".join(plan) for name, plan in bad.items())


async def test_a_run_s_detail_reads_through_indexes(db: Database, seeded: str) -> None:
    for stmt in (run_statement(TENANT, seeded), log_page(seeded), log_page(seeded, 3, 50), labels_statement([seeded])):
        plan = await _plan(db, stmt)
        assert not _table_scans(db, plan), "\n".join(plan)


async def test_the_pruners_reads_go_through_indexes(db: Database, seeded: str) -> None:
    """A deleting batch reads its 50 runs again by their ids: on SQLite through the primary key. It took an
    index on the status (every finished run) when the statement ran with its parameters bound: 260-900 ms
    a batch at 500,000 runs, every batch over the 100 ms a pruning transaction may hold the write lock."""
    plan = await _plan(db, due_statement([f"{n:036d}" for n in range(50)]))
    assert not _table_scans(db, plan), "\n".join(plan)
    if db.is_sqlite:
        assert "sqlite_autoindex_instances_1 (id=?)" in plan[0], "\n".join(plan)
    cutoffs = Cutoffs(production=NOW - 100, test=NOW - 300, count=NOW - 50)
    for after in (None, Cursor(NOW - 1000, frozenset({"8" * 36}))):
        found = candidates_statement(TENANT, cutoffs, [seeded], after, 50)
        assert found is not None
        plan = await _plan(db, found)
        assert not _table_scans(db, plan), "\n".join(plan)
        if db.is_sqlite:
            assert _BY_TIME in plan[0], "\n".join(plan)  # the tenant's runs, oldest first: the read stops at 50
