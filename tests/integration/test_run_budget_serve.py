"""Issue 21, "One run, 2.7 GB", against a real ``flowdeck serve`` (SQLite, default settings, real sandbox
processes): tenant B's loop of 30 items whose ``python`` body returns a 10 MB string ends FAILED at
FLOWDECK_MAX_RUN_BYTES (64 MiB by default), the serve process's peak memory (VmHWM) stays far below
what it reached before (2.7 GB), and tenant A's trivial test runs stay fast meanwhile."""

from __future__ import annotations

import asyncio
import os
import statistics
import subprocess
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from flowdeck.accounts.passwords import PasswordService
from flowdeck.accounts.rate_limit import LoginRateLimiter
from flowdeck.accounts.service import AccountsService
from flowdeck.storage.database import Database
from tests.support.flowdeck_processes import serving
from tests.support.graphs import definition, edge, end, node

PEAK_RSS_LIMIT_MB = 600  # the target; before the budget serve reached 2.7 GB
TERMINAL = ("COMPLETED", "FAILED", "CANCELLED")


def _peak_rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    raise AssertionError("no VmHWM")


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[str, subprocess.Popen[bytes], str]]:
    """``flowdeck serve`` on a SQLite file with the default limits; (base URL, process, database URL)."""
    url = f"sqlite+aiosqlite:///{tmp_path / 'flowdeck.db'}"
    env = {**os.environ, "FLOWDECK_DATABASE_URL": url, "FLOWDECK_SECRET_KEY": "budget-test"}
    for name in ("FLOWDECK_MAX_RUN_BYTES", "FLOWDECK_SANDBOX_WORKERS", "FLOWDECK_WORKER_CONCURRENCY"):
        env.pop(name, None)
    with serving(env, tmp_path) as (serve,):
        assert serve.child is not None
        yield serve.url, serve.child, url


async def _token(database_url: str, tenant: str) -> str:
    db = Database(database_url)
    try:
        accounts = AccountsService(db, PasswordService(), LoginRateLimiter(db))
        email = f"{tenant}@example.com"
        await accounts.create_user(email, tenant, None)
        return (await accounts.create_token_for_email(email, "api"))[1]
    finally:
        await db.dispose()


def _python(node_id: str, code: str) -> dict[str, Any]:
    return node(node_id, "python", config={"code": code})


async def _finished(api: httpx.AsyncClient, run_id: str, timeout: float) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        run = (await api.get(f"/api/runs/{run_id}")).json()
        if run["status"] in TERMINAL:
            return dict(run)
        await asyncio.sleep(0.05)
    raise AssertionError(f"run {run_id} did not end within {timeout} s")


@pytest.fixture
async def clients(served: tuple[str, subprocess.Popen[bytes], str]) -> AsyncIterator[tuple[Any, ...]]:
    base, _, database_url = served
    headers = [{"Authorization": f"Bearer {await _token(database_url, name)}"} for name in ("tenant-a", "tenant-b")]
    async with (
        httpx.AsyncClient(base_url=base, headers=headers[0], timeout=60) as a,
        httpx.AsyncClient(base_url=base, headers=headers[1], timeout=60) as b,
    ):
        yield a, b


async def test_a_loop_of_ten_megabyte_items_fails_at_the_budget_with_bounded_memory_and_others_stay_fast(
    served: tuple[str, subprocess.Popen[bytes], str], clients: tuple[httpx.AsyncClient, httpx.AsyncClient]
) -> None:
    _, proc, _ = served
    a, b = clients
    bomb = definition(
        [
            node("start", "start"),
            node("each", "loop", config={"items": list(range(30))}),
            _python("big", "return 'x' * 10_000_000"),
            end(params={"count": "{{ ctx.each.count }}"}),
        ],
        [edge("start", "each"), edge("each", "big", "loop"), edge("each", "end", "done")],
    )
    trivial = definition(
        [node("start", "start"), _python("answer", "return {'v': 42}"), end(params={"v": "{{ ctx.answer.v }}"})],
        [edge("start", "answer"), edge("answer", "end")],
    )
    warm = (await a.post("/api/test-runs", json=trivial)).json()["instanceId"]  # the sandbox started
    assert (await _finished(a, warm, 30))["status"] == "COMPLETED"
    before = _peak_rss_mb(proc.pid)

    started = await b.post("/api/test-runs", json=bomb)
    assert started.status_code == 202, started.text
    bomb_id = started.json()["instanceId"]
    seconds: list[float] = []
    while (await b.get(f"/api/runs/{bomb_id}")).json()["status"] not in TERMINAL:
        began = time.monotonic()
        run_id = (await a.post("/api/test-runs", json=trivial)).json()["instanceId"]
        run = await _finished(a, run_id, 60)
        seconds.append(time.monotonic() - began)
        assert run["status"] == "COMPLETED" and run["output"] == {"v": 42}
    run = await _finished(b, bomb_id, 5)
    peak = _peak_rss_mb(proc.pid)
    print(
        f"\npeak RSS of serve: {before:.0f} MB before, {peak:.0f} MB after the bomb; tenant A's test runs meanwhile: "
        f"n={len(seconds)}, median {statistics.median(seconds or [0]):.3f} s, max {max(seconds or [0]):.3f} s"
    )

    assert run["status"] == "FAILED"
    assert "FLOWDECK_MAX_RUN_BYTES" in run["error"] and "node 'big'" in run["error"], run["error"]
    stored = [v for v in run["nodes"]["big"]["iterations"].values() if v["status"] == "COMPLETED"]
    assert len(stored) == 3  # 64 MiB holds three 10 MB items counted twice (their rows and the loop's copies)
    assert all(v["output"] is None and v["outputTruncated"]["bytes"] == 10_000_002 for v in stored)
    full = await b.get(stored[0]["outputTruncated"]["href"])
    assert full.status_code == 200 and len(full.content) == 10_000_002
    assert (await a.get(stored[0]["outputTruncated"]["href"])).status_code == 404  # another tenant's run
    assert peak < PEAK_RSS_LIMIT_MB
    assert seconds and statistics.median(seconds) < 1.0
