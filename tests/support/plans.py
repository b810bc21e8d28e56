"""PostgreSQL's generic plan of a compiled statement, as a list of (node type, relation) pairs.

The generic plan is the one PostgreSQL makes at a prepared statement's sixth execution and keeps for the
connection's life; on a fresh database it is made on tables it has never analysed, which is when a plan
that reads a table whole looks cheap (docs/benchmarks.md)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import asyncpg  # type: ignore[import-untyped]
from sqlalchemy.engine import make_url

from flowdeck.storage.compiled import CompiledStatement

__all__ = ("generic_plan_scans",)


async def generic_plan_scans(postgres_url: str, statement: CompiledStatement) -> list[tuple[str, str | None]]:
    url = make_url(postgres_url)
    conn = await asyncpg.connect(host=url.host, port=url.port or 5432, user=url.username, database=url.database)
    try:
        await conn.execute("SET plan_cache_mode = force_generic_plan")
        await conn.execute(f"PREPARE planned AS {statement.sql}")
        nulls = ", ".join(["NULL"] * len(statement.names))
        plan = json.loads(await conn.fetchval(f"EXPLAIN (FORMAT JSON) EXECUTE planned({nulls})"))
    finally:
        await conn.close()
    return [(node["Node Type"], node.get("Relation Name")) for node in _nodes(plan[0]["Plan"])]


def _nodes(node: dict[str, Any]) -> Iterator[dict[str, Any]]:
    yield node
    for child in node.get("Plans", ()):
        yield from _nodes(child)
