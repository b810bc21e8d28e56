"""A node's context read (``StateManager.assemble_context``, the ``context_rows`` statement): compiled once, with
its node and scope lists as one parameter each, it still probes the log's idempotency index per listed node on
both databases, and folds what the engine's runs need (loops, retries: tests/integration/test_loops.py)."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import asyncpg  # type: ignore[import-untyped]
from sqlalchemy.engine import make_url

from flowdeck.storage.database import Database
from flowdeck.storage.statements import statements_for


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
    statement = statements_for(False).context_rows
    url = make_url(postgres_url)
    conn = await asyncpg.connect(host=url.host, port=url.port or 5432, user=url.username, database=url.database)
    try:
        await conn.execute("SET plan_cache_mode = force_generic_plan")
        await conn.execute(f"PREPARE context_rows AS {statement.sql}")
        nulls = ", ".join(["NULL"] * len(statement.names))
        plan = json.loads(await conn.fetchval(f"EXPLAIN (FORMAT JSON) EXECUTE context_rows({nulls})"))
    finally:
        await conn.close()
    scans = [(node["Node Type"], node.get("Relation Name")) for node in _nodes(plan[0]["Plan"])]
    reads = [kind for kind, table in scans if table == "instance_logs"]
    assert len(reads) == 2 and set(reads) <= {"Index Scan", "Index Only Scan", "Bitmap Heap Scan"}, scans


def _nodes(node: dict[str, Any]) -> Iterator[dict[str, Any]]:
    yield node
    for child in node.get("Plans", ()):
        yield from _nodes(child)
