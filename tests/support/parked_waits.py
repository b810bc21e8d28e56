"""Many runs parked on a ``wait`` node, and what a parked wait holds (for the "1,000 waiting runs" test and the
latency measurement in ``python -m tests.support.wait_latency``)."""

from __future__ import annotations

import asyncio
import time

import sqlalchemy as sa

from flowdeck.engine.engine import Engine
from flowdeck.storage.database import Database
from flowdeck.storage.tables import instance_logs, node_jobs
from flowdeck.storage.waits import WAIT_KEY
from tests.support.graphs import definition, edge, end, node

WEBHOOK_WAIT = definition(
    [node("start", "start"), node("hold", "wait", config={"resumeOn": "webhook"}), end()],
    [edge("start", "hold"), edge("hold", "end", "success")],
    timeoutSeconds=7 * 24 * 3600 + 60,
)
PLAIN = definition(
    [node("start", "start"), node("work", config={"output": 7}), end(params={"v": "{{ ctx.work }}"})],
    [edge("start", "work"), edge("work", "end", "success")],
)


async def park(engine: Engine, tenant_id: str, count: int, seconds: float = 120) -> list[str]:
    """Start ``count`` runs of a webhook wait (16 starts at a time) and return once every one is parked."""
    workflow_id = (await engine.create_workflow(tenant_id, WEBHOOK_WAIT)).id
    run_ids: list[str] = []
    for first in range(0, count, 16):
        starts = [engine.start_workflow_run(tenant_id, workflow_id) for _ in range(min(16, count - first))]
        run_ids += await asyncio.gather(*starts)
    deadline = time.monotonic() + seconds
    while await parked_count(engine.db, run_ids) < count:
        assert time.monotonic() < deadline, f"only {await parked_count(engine.db, run_ids)} of {count} parked"
        await asyncio.sleep(0.1)
    return run_ids


async def parked_count(db: Database, run_ids: list[str]) -> int:
    """How many of the runs logged their wait as parked (the SYSTEM_SET row that shows WAITING)."""
    c = instance_logs.c
    found = 0
    for first in range(0, len(run_ids), 500):
        stmt = sa.select(sa.func.count()).where(
            c.instance_id.in_(run_ids[first : first + 500]), c.output_variable == WAIT_KEY
        )
        async with db.read() as conn:
            found += int((await conn.execute(stmt)).scalar_one())
    return found


async def wait_jobs(db: Database, run_ids: list[str]) -> list[tuple[str | None, float]]:
    """The parked jobs of the runs' ``hold`` nodes: (lease owner, due at)."""
    c = node_jobs.c
    rows: list[tuple[str | None, float]] = []
    for first in range(0, len(run_ids), 500):
        chunk = run_ids[first : first + 500]
        stmt = sa.select(c.lease_owner, c.available_at).where(c.instance_id.in_(chunk), c.node_id == "hold")
        async with db.read() as conn:
            rows += [(row[0], float(row[1])) for row in await conn.execute(stmt)]
    return rows
