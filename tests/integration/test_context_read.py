"""A node's context read (``StateManager.assemble_context``, the ``context_rows`` statement): compiled once, with
its node and scope lists as one parameter each, it still probes the log's idempotency index per listed node on
both databases, and folds what the engine's runs need (loops, retries: tests/integration/test_loops.py)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from flowdeck.storage.database import Database
from flowdeck.storage.statements import statements_for
from tests.support.plans import generic_plan_scans


async def test_sqlite_reads_a_context_by_the_idempotency_index(tmp_path: Path) -> None:
    db = Database(f"sqlite+aiosqlite:///{tmp_path / 'flowdeck.db'}")
    await db.create_all()
    await db.dispose()
    statement = statements_for(True).context_rows
    arguments = statement.arguments({"p_id": "r", "p_hidden": "h", "p_nodes": ["a", "b"], "p_scopes": ["", "1"]})
    with sqlite3.connect(tmp_path / "flowdeck.db") as conn:
        plan = [row[3] for row in conn.execute(f"EXPLAIN QUERY PLAN {statement.sql}", arguments)]
    assert not [step for step in plan if step.startswith("SCAN instance_logs")], plan
    probe = "SEARCH instance_logs USING INDEX uq_instance_logs_node_event"
    assert f"{probe} (instance_id=? AND node_id=? AND iteration=? AND event_type=?)" in plan, plan


async def test_postgresql_reads_a_context_by_index_in_its_generic_plan(postgres_url: str) -> None:
    """The generic plan (made at the sixth execution and kept) on tables PostgreSQL has never analysed."""
    scans = await generic_plan_scans(postgres_url, statements_for(False).context_rows)
    reads = [kind for kind, table in scans if table == "instance_logs"]
    assert len(reads) == 2 and set(reads) <= {"Index Scan", "Index Only Scan", "Bitmap Heap Scan"}, scans
