"""Measure a normal run's latency with 0 and with 1,000 runs parked on a ``wait`` node (docs/waits.md).

``python -m tests.support.wait_latency sqlite+aiosqlite:////tmp/w.db`` (or a PostgreSQL URL of an empty
database): one engine (concurrency 4, poll interval 50 ms) runs a three-node run 30 times one after another,
parks 1,000 waits, and runs it 30 times again; prints the median and 90th percentile of start-to-end.
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import time

import sqlalchemy as sa

from flowdeck.engine.engine import Engine
from flowdeck.storage.database import Database
from tests.support.handlers import make_test_registry
from tests.support.parked_waits import PLAIN, park


async def _latencies(engine: Engine, tenant_id: str, workflow_id: str, count: int) -> list[float]:
    found = []
    for _ in range(count):
        began = time.perf_counter()
        run_id = await engine.start_workflow_run(tenant_id, workflow_id)
        await engine.wait_for_run(run_id, 30)
        found.append((time.perf_counter() - began) * 1000)
    return found


def _summary(label: str, ms: list[float]) -> str:
    ordered = sorted(ms)
    return f"{label}: median {statistics.median(ordered):.1f} ms, p90 {ordered[int(len(ordered) * 0.9)]:.1f} ms"


async def main(url: str) -> None:
    db = Database(url)
    await db.create_all()
    engine = Engine(db, make_test_registry(), concurrency=4, poll_interval=0.05)
    await engine.start()
    try:
        tenant_id = await engine.tenants.ensure(f"bench-{time.time_ns()}")
        workflow_id = (await engine.create_workflow(tenant_id, PLAIN)).id
        await _latencies(engine, tenant_id, workflow_id, 5)  # warm up
        print(_summary("0 waiting", await _latencies(engine, tenant_id, workflow_id, 30)))
        began = time.perf_counter()
        await park(engine, tenant_id, 1000)
        print(
            f"1,000 waits parked in {time.perf_counter() - began:.1f} s; active jobs {len(engine.worker.active_jobs)}"
        )
        print(_summary("1,000 waiting", await _latencies(engine, tenant_id, workflow_id, 30)))
        if not db.is_sqlite:  # autovacuum may not have analysed the grown tables yet: show both
            async with db.transaction() as conn:
                await conn.execute(sa.text("ANALYZE"))
            print(_summary("1,000 waiting, after ANALYZE", await _latencies(engine, tenant_id, workflow_id, 30)))
    finally:
        await engine.stop()
        await db.dispose()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1]))
