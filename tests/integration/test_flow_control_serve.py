"""Flow control on a real ``flowdeck serve`` (issue 23 item 4): on PostgreSQL with a worker process beside it
(two processes claim, admit and count), 10 runs started at once through the API by a workflow limited to 2 at
once never run more than 2 at a time, the queued ones say why they wait, and every run completes once."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import httpx
import pytest

from flowdeck.storage.database import Database
from tests.integration.test_run_budgets_serve import _token
from tests.integration.test_worker_processes import serve
from tests.support.graphs import definition, edge, end, node

pytestmark = pytest.mark.slow


def _most_at_once(runs: list[dict[str, Any]]) -> int:
    moments = sorted([(r["startedAt"], 1) for r in runs] + [(r["completedAt"], -1) for r in runs])
    most = current = 0
    for _, change in moments:
        current += change
        most = max(most, current)
    return most


async def test_a_limit_holds_across_serve_and_its_worker_process(database_url: str) -> None:
    workers = "0" if database_url.startswith("sqlite") else "1"
    with serve(database_url, "--workers", workers) as (child, lines):
        lines.wait_for("Flowdeck is ready", timeout=60)
        command = [str(arg) for arg in child.args]  # type: ignore[union-attr]
        base = f"http://127.0.0.1:{command[command.index('--port') + 1]}"
        db = Database(database_url)
        try:
            token = await _token(db, "flow")
        finally:
            await db.dispose()
        async with httpx.AsyncClient(base_url=base, headers={"Authorization": f"Bearer {token}"}, timeout=20) as api:
            graph = definition(
                [node("start", "start"), node("pause", "delay", config={"seconds": 0.4}), end()],
                [edge("start", "pause"), edge("pause", "end")],
                concurrency={"limit": 2, "key": "{{ ctx.input.team }}"},
            )
            created = await api.post("/api/workflows", json=graph)
            assert created.status_code == 201, created.text
            workflow_id = created.json()["id"]
            started = await asyncio.gather(
                *(api.post(f"/api/workflows/{workflow_id}/runs", json={"input": {"team": "red"}}) for _ in range(10))
            )
            run_ids = [response.json()["instanceId"] for response in started]
            waiting = [(await api.get(f"/api/runs/{run_id}")).json() for run_id in run_ids]
            assert any(w["status"] == "PENDING" and "allows 2 run(s)" in (w["waitingReason"] or "") for w in waiting)

            deadline = time.monotonic() + 120
            while True:
                runs = [(await api.get(f"/api/runs/{run_id}")).json() for run_id in run_ids]
                if all(r["status"] == "COMPLETED" for r in runs):
                    break
                assert time.monotonic() < deadline, [r["status"] for r in runs]
                await asyncio.sleep(0.3)
            assert _most_at_once(runs) == 2
            assert all(r["nodes"]["start"]["attempt"] == 1 for r in runs)  # each started once
