"""The run-tree bomb as an attacker plays it (issue 21): a real ``flowdeck serve`` (with a worker process
beside it on PostgreSQL, so two processes call and count), real sandbox processes, two tenants. One API
call of tenant A starts a workflow that calls itself from a loop of 10; the tree stops by itself at
FLOWDECK_MAX_TREE_RUNS, and tenant B's Python test run completes meanwhile."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import httpx
import pytest

from flowdeck.accounts.passwords import PasswordService
from flowdeck.accounts.rate_limit import LoginRateLimiter
from flowdeck.accounts.service import AccountsService
from flowdeck.storage.database import Database
from tests.integration.test_worker_processes import serve
from tests.support.graphs import definition, edge, end, node

pytestmark = pytest.mark.slow

TREE_RUNS = 30


def _bomb(self_id: str) -> dict[str, Any]:
    return definition(
        [
            node("start", "start"),
            node("each", "loop", config={"items": list(range(10)), "concurrency": 10}),
            node("again", "workflow", config={"workflowId": self_id, "input": {}}, timeoutSeconds=3000),
            end(),
        ],
        [edge("start", "each"), edge("each", "again", "loop"), edge("each", "end", "done")],
        timeoutSeconds=3000,
    )


async def _token(db: Database, tenant: str) -> str:
    accounts = AccountsService(db, PasswordService(), LoginRateLimiter(db))
    email = f"{tenant}-{time.time_ns()}@example.com"
    await accounts.create_user(email, f"{tenant}-{time.time_ns()}", None)
    return (await accounts.create_token_for_email(email, "attack"))[1]


async def _until(check: Any, what: str, timeout: float = 120.0) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = await check()
        if found:
            return found
        await asyncio.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what}")


async def test_the_bomb_stops_at_the_cap_on_a_real_server(database_url: str) -> None:
    workers = "0" if database_url.startswith("sqlite") else "1"
    with serve(database_url, "--workers", workers, FLOWDECK_MAX_TREE_RUNS=str(TREE_RUNS)) as (child, lines):
        lines.wait_for("Flowdeck is ready", timeout=60)
        command = [str(arg) for arg in child.args]  # type: ignore[union-attr]
        base = f"http://127.0.0.1:{command[command.index('--port') + 1]}"
        db = Database(database_url)  # serve made the schema: users and tokens go straight in
        try:
            attacker, neighbour = await _token(db, "attacker"), await _token(db, "neighbour")
        finally:
            await db.dispose()
        async with (
            httpx.AsyncClient(base_url=base, headers={"Authorization": f"Bearer {attacker}"}, timeout=20) as a,
            httpx.AsyncClient(base_url=base, headers={"Authorization": f"Bearer {neighbour}"}, timeout=20) as b,
        ):
            trivial = definition([node("start", "start"), end()], [edge("start", "end")])
            workflow_id = (await a.post("/api/workflows", json=trivial)).json()["id"]
            saved = await a.put(f"/api/workflows/{workflow_id}", json=_bomb(workflow_id) | {"version": 1})
            assert saved.status_code == 200, saved.text
            assert (await a.post(f"/api/workflows/{workflow_id}/runs", json={})).status_code == 202

            python = definition(
                [node("start", "start"), node("py", "python", config={"code": "return {'v': 42}"}), end()],
                [edge("start", "py"), edge("py", "end", "success")],
            )
            test_run = (await b.post("/api/test-runs", json=python)).json()["instanceId"]

            async def neighbour_done() -> dict[str, Any] | None:
                run = (await b.get(f"/api/runs/{test_run}")).json()
                return run if run["status"] not in ("RUNNING", "PENDING") else None

            assert (await _until(neighbour_done, "tenant B's test run"))["status"] == "COMPLETED"

            async def tree_ended() -> list[dict[str, Any]] | None:
                runs = (await a.get("/api/runs", params={"limit": 100})).json()["items"]
                tree = [r for r in runs if r["workflowId"] == workflow_id]
                return tree if tree and all(r["status"] not in ("RUNNING", "PENDING") for r in tree) else None

            tree = await _until(tree_ended, "the tree to stop by itself")
            assert len(tree) == TREE_RUNS
            assert "FAILED" in {r["status"] for r in tree}
