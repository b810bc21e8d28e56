"""``flowdeck bench --http`` at a tiny size: a real ``flowdeck serve``, every webhook answered with its run's output."""

from __future__ import annotations

import os
import shutil
from dataclasses import replace
from pathlib import Path

import pytest

from flowdeck import bench_http
from flowdeck.bench_http import HttpPlan, Load, http_rows
from flowdeck.cli import build_parser
from flowdeck.settings import Settings

COLUMNS = [
    "workload",
    "generator",
    "connections",
    "requests",
    "errors",
    "reqPerSecond",
    "msP50",
    "msP99",
    "serverCpuSPer1000",
    "serverCpuPct",
    "clientCpuSPer1000",
    "clientCpuPct",
    "commitsPerCall",
    "writeLockWaitPct",
    "n8n",
]


def settings(tmp_path: Path) -> Settings:
    # A SQLite URL: the bench makes its own temporary file (this one stays unused).
    return replace(Settings.from_env(), database_url=f"sqlite+aiosqlite:///{tmp_path / 'unused.db'}")


async def test_every_scenario_answers_each_request_with_its_runs_output(tmp_path: Path) -> None:
    plan = HttpPlan(Load(2, requests=20), Load(1, requests=20), Load(2, requests=4), generator="python")
    rows = await http_rows(settings(tmp_path), plan)

    assert [(r["workload"], r["connections"]) for r in rows] == [
        ("http trivial (start -> end)", 2),
        ("http trivial (start -> end)", 1),
        ("http chain of 10 python", 2),
        ("http chain of 10 python", 1),
        ("http fan-out 10 -> join", 2),
        ("http fan-out 10 -> join", 1),
    ]
    for row in rows:
        assert list(row) == COLUMNS
        assert row["generator"] == "python asyncio"
        assert row["requests"] == 20 and row["errors"] == 0, row
        assert row["msP99"] >= row["msP50"] > 0 and row["reqPerSecond"] > 0
        assert row["serverCpuSPer1000"] > 0 and row["serverCpuPct"] > 0 and row["clientCpuSPer1000"] > 0
        assert 0 < row["commitsPerCall"] <= 30, row  # at most one per write transaction, fewer than 30 a call
        assert row["writeLockWaitPct"] == 0, row  # serve alone: nobody else holds the lock
        assert "CPU s" in row["n8n"]
    assert not (tmp_path / "unused.db").exists()  # SQLite: the bench's own file, not the configured one


async def test_with_a_worker_process_beside_serve_on_sqlite_every_answer_still_comes(tmp_path: Path) -> None:
    """``bench --http --workers 1``: serve on SQLite with a worker process, no Redis; the runs' ends the child
    decides reach the webhook waiting in serve over serve's pipes."""
    plan = HttpPlan(Load(2, requests=20), Load(1, requests=10), Load(2, requests=4), scenarios=("chain",))
    rows = await http_rows(settings(tmp_path), replace(plan, generator="python"), serve_workers=1)
    assert [(r["workload"], r["requests"], r["errors"]) for r in rows] == [
        ("http chain of 10 python (serve + 1 worker processes)", 20, 0),
        ("http chain of 10 python (serve + 1 worker processes)", 10, 0),
    ]
    # serve's and the worker process's listeners both answered (one that does not makes the figures None)
    assert all(r["commitsPerCall"] > 0 and r["writeLockWaitPct"] >= 0 for r in rows), rows


async def test_an_answer_without_the_expected_output_is_an_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The check is not vacuous: the same server answering 200 COMPLETED with another output counts as errors."""
    wrong = replace(bench_http.SCENARIOS["trivial"](), output={"out": 8})
    monkeypatch.setitem(bench_http.SCENARIOS, "trivial", lambda: wrong)
    plan = HttpPlan(Load(2, requests=6), Load(1, requests=3), Load(1, requests=1), scenarios=("trivial",))
    rows = await http_rows(settings(tmp_path), replace(plan, generator="python"))
    assert [(r["requests"], r["errors"]) for r in rows] == [(6, 6), (3, 3)]


@pytest.mark.skipif(
    shutil.which("wrk") is None and os.environ.get("CI") != "true",
    reason="wrk is not installed (make test installs it)",
)
async def test_wrk_drives_the_same_checks(tmp_path: Path) -> None:
    plan = HttpPlan(Load(2, seconds=1), Load(1, seconds=1), Load(2, requests=4), scenarios=("chain",))
    rows = await http_rows(settings(tmp_path), plan)
    assert [r["generator"] for r in rows] == ["wrk", "wrk"]
    for row in rows:
        assert row["requests"] > 0 and row["errors"] == 0, row
        assert row["msP99"] >= row["msP50"] > 0 and row["serverCpuSPer1000"] > 0


def test_the_command_line_asks_for_the_http_rounds_only_with_http() -> None:
    assert build_parser().parse_args(["bench", "--http", "--quick"]).http is True
    assert build_parser().parse_args(["bench"]).http is False


async def test_on_postgres_with_a_worker_process_every_answer_comes_and_each_row_starts_vacuumed(
    postgres_url: str, tmp_path: Path
) -> None:
    """PostgreSQL: the ends of the runs the worker process takes reach the webhook waiting in serve (a worker
    hears no run end, serve does), and before each row the hot tables' dead rows of the rounds before are
    cleared, so that no row pays for the ones before it (autovacuum may be off)."""
    import asyncpg  # type: ignore[import-untyped]
    from sqlalchemy.engine import make_url

    url = make_url(postgres_url)
    conn = await asyncpg.connect(host=url.host, port=url.port or 5432, user=url.username, database=url.database)
    try:
        started = await conn.fetchval("SELECT now()")
        # 20 calls in flight: past serve's share of its one tenant (8), the starts past it may go to the worker
        plan = HttpPlan(Load(20, requests=60), Load(1, requests=10), Load(2, requests=4), scenarios=("trivial",))
        rows = await http_rows(
            replace(settings(tmp_path), database_url=postgres_url), replace(plan, generator="python"), 1
        )
        vacuumed = await conn.fetchval("SELECT last_vacuum FROM pg_stat_user_tables WHERE relname = 'node_jobs'")
    finally:
        await conn.close()
    assert [(r["requests"], r["errors"]) for r in rows] == [(60, 0), (10, 0)]
    assert vacuumed is not None and vacuumed > started
