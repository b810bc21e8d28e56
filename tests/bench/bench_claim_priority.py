"""Claim statements on PostgreSQL with a backlog (a script, not a test):
``python tests/bench/bench_claim_priority.py [--due 10000] [--repeat 15]``.

Creates a scratch database (dropped at the end), fills ``node_jobs`` with ``--due`` due jobs (200 runs'
worth) and 2,000 leased ones, for one tenant or two (a third of the jobs), all at priority 50 ("one") or
half at 70 ("mixed"), and prints the median and best ``EXPLAIN ANALYZE`` execution time of each claim
statement (rolled back, so every repetition sees the same rows) with its scan nodes. docs/benchmarks.md
"Priority in the claim" has the numbers.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import uuid

import asyncpg
from sqlalchemy.engine import make_url

from flowdeck.storage.database import Database
from flowdeck.storage.statements import statements_for

POSTGRES_URL = os.environ.get("FLOWDECK_TEST_POSTGRES_URL", "postgresql+asyncpg://postgres@127.0.0.1:5432/test")

_PARAMS = {
    "p_now": 2000.0,
    "p_limit": 16,
    "p_owner": "bench",
    "p_until": 3000.0,
    "p_cap": 8,
    "p_held": {},
    "p_step": 1.0,
    "p_tenant": "t1",
}


async def _fill(conn: asyncpg.Connection, due: int, *, mixed: bool, tenants: int) -> None:
    await conn.execute("TRUNCATE node_jobs")
    await conn.execute(
        """INSERT INTO node_jobs (instance_id, node_id, iteration, attempt, retry_base, available_at, created_at,
            tenant_id, takeovers, priority)
        SELECT 'run' || (g / 50), 'n' || g, '', 1, 1, 1000 + g * 0.01, 1000, 't1', 0,
            CASE WHEN $2 AND (g / 50) % 2 = 0 THEN 70 ELSE 50 END
        FROM generate_series(1, $1) g""",
        due,
        mixed,
    )
    await conn.execute(
        """INSERT INTO node_jobs (instance_id, node_id, iteration, attempt, retry_base, available_at, lease_owner,
            created_at, tenant_id, takeovers, priority)
        SELECT 'leased' || g, 'n', '', 1, 1, 5000 + g, 'w', 1000, 't1', 0, 50 FROM generate_series(1, 2000) g"""
    )
    if tenants == 2:
        await conn.execute("UPDATE node_jobs SET tenant_id = 't2' WHERE id % 3 = 0")
    await conn.execute("ANALYZE node_jobs")


async def _measure(conn: asyncpg.Connection, name: str, repeat: int) -> tuple[float, float, list[str]]:
    statement = getattr(statements_for(is_sqlite=False), name)
    times: list[float] = []
    plan: list[str] = []
    for _ in range(repeat):
        transaction = conn.transaction()
        await transaction.start()
        rows = await conn.fetch("EXPLAIN (ANALYZE, COSTS OFF) " + statement.sql, *statement.arguments(_PARAMS))
        await transaction.rollback()
        plan = [row[0] for row in rows]
        times.append(float(plan[-1].split()[-2]))
    scans = [line.strip() for line in plan if "Scan" in line and "pk_node_jobs" not in line]
    return statistics.median(times), min(times), scans


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--due", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=15)
    args = parser.parse_args()
    url = make_url(POSTGRES_URL)
    name = f"flowdeck_bench_claim_{uuid.uuid4().hex[:8]}"
    admin = await asyncpg.connect(host=url.host, port=url.port or 5432, user=url.username, database=url.database)
    await admin.execute(f'CREATE DATABASE "{name}"')
    try:
        db = Database(url.set(database=name).render_as_string(hide_password=False))
        await db.create_all()
        await db.dispose()
        conn = await asyncpg.connect(host=url.host, port=url.port or 5432, user=url.username, database=name)
        try:
            for tenants, statements in (
                (1, ("due_tenants", "claim_one_tenant", "claim_one_tenant_aged")),
                (2, ("claim_jobs", "claim_jobs_aged")),
            ):
                for mixed in (False, True):
                    await _fill(conn, args.due, mixed=mixed, tenants=tenants)
                    for statement in statements:
                        median, best, scans = await _measure(conn, statement, args.repeat)
                        label = f"{statement} ({tenants} tenant(s), {'mixed' if mixed else 'one'} priority)"
                        print(f"{label}: median {median:.2f} ms, best {best:.2f} ms; {' | '.join(scans)}")
        finally:
            await conn.close()
    finally:
        await admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        await admin.close()


if __name__ == "__main__":
    asyncio.run(main())
