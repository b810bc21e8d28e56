"""Widget benchmark (a script, not a test): ``python tests/bench/bench_widgets.py [--runs N] [--requests R]``.

Serves the real app (``flowdeck.app.create_app`` in a uvicorn process) on a fresh SQLite file, stores N
finished production runs of one workflow straight into ``instances`` (mostly COMPLETED, some FAILED,
plus test runs, all with a 50-row output), then times ``GET /api/widgets/{id}/data`` of a replay table
widget over real HTTP from this process: p50 and p99 (target: p50 <= 20 ms with 10,000 runs).
It also prints the query plan of the replay lookup.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import httpx
import sqlalchemy as sa
from bench_api import SMALL, percentile, prepare, server

from flowdeck.domain.statuses import RunStatus
from flowdeck.storage.database import Database
from flowdeck.storage.tables import instances, workflows

TABLE = {
    "rowsPath": "orders",
    "columns": [
        {"path": "id"},
        {"path": "customer.name", "label": "Customer"},
        {"path": "total", "format": "currency"},
    ],
}
_REPLAY_SQL = (  # what storage/widgets.py's replay lookup sends
    "SELECT id, output FROM instances WHERE workflow_id = :w AND status = 'COMPLETED' AND created_at < 1e300 "
    "AND is_test IS 0 AND tenant_id = :t ORDER BY created_at DESC LIMIT 1"
)


def output(n: int) -> dict[str, Any]:
    return {"orders": [{"id": n * 100 + i, "customer": {"name": f"c{i}"}, "total": i * 1.5} for i in range(50)]}


async def store_runs(database_url: str, workflow_id: str, count: int) -> None:
    """``count`` finished runs, one in ten FAILED and one in twenty a test run, a second apart."""
    db = Database(database_url)
    async with db.read() as conn:
        tenant_id = (await conn.execute(sa.select(workflows.c.tenant_id).where(workflows.c.id == workflow_id))).scalar()
    start = time.time() - count
    rows = []
    for n in range(count):
        status = RunStatus.FAILED if n % 10 == 9 else RunStatus.COMPLETED
        is_test = n % 20 == 19
        at = start + n
        rows.append(
            {
                "id": str(uuid.uuid4()),
                "tenant_id": tenant_id,
                "workflow_id": None if is_test else workflow_id,
                "workflow_version": None if is_test else 1,
                "is_test": is_test,
                "status": status.value,
                "version": 3,
                "trigger": "test" if is_test else "api",
                "input": {"n": n},
                "output": output(n) if status is RunStatus.COMPLETED else None,
                "error": "boom" if status is RunStatus.FAILED else None,
                "created_at": at,
                "started_at": at,
                "completed_at": at + 0.5,
                "updated_at": at + 0.5,
                "deadline_at": None,
            }
        )
    async with db.transaction() as conn:
        for first in range(0, count, 1000):
            await conn.execute(instances.insert(), rows[first : first + 1000])
    async with db.read() as conn:
        await conn.execute(sa.text("ANALYZE"))
        plan = await conn.execute(sa.text(f"EXPLAIN QUERY PLAN {_REPLAY_SQL}"), {"w": workflow_id, "t": tenant_id})
        print("  replay lookup plan:", "; ".join(str(row[-1]) for row in plan))
    await db.dispose()


async def main(runs: int, requests: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        database_url = f"sqlite+aiosqlite:///{Path(tmp) / 'bench.db'}"
        token = await prepare(database_url)
        async with server(database_url, with_worker=False) as (url, _):
            headers = {"Authorization": f"Bearer {token}"}
            async with httpx.AsyncClient(base_url=url, headers=headers, timeout=30) as client:
                workflow_id = (await client.post("/api/workflows", json=SMALL)).json()["id"]
                began = time.perf_counter()
                await store_runs(database_url, workflow_id, runs)
                print(f"  stored {runs} runs in {time.perf_counter() - began:.1f} s (SQLite)")
                body = {"workflowId": workflow_id, "name": "orders", "type": "table", "config": TABLE}
                widget_id = (await client.post("/api/widgets", json=body)).json()["id"]
                for _ in range(50):  # warm-up
                    answer = (await client.get(f"/api/widgets/{widget_id}/data")).json()
                assert answer["status"] == "ready" and len(answer["data"]["rows"]) == 50, answer
                latencies = []
                for _ in range(requests):
                    began = time.perf_counter()
                    response = await client.get(f"/api/widgets/{widget_id}/data")
                    latencies.append((time.perf_counter() - began) * 1000)
                    assert response.status_code == 200
        print(
            f"GET /api/widgets/{{id}}/data (replay table, 50 rows x 3 columns) over {runs} stored runs, "
            f"{requests} requests: p50={statistics.median(latencies):.2f} ms p90={percentile(latencies, 0.9):.2f} ms "
            f"p99={percentile(latencies, 0.99):.2f} ms (target p50 <= 20 ms)"
        )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=10_000, help="stored runs of the workflow (default 10000)")
    parser.add_argument("--requests", type=int, default=1000, help="timed requests (default 1000)")
    args = parser.parse_args()
    asyncio.run(main(args.runs, args.requests))
