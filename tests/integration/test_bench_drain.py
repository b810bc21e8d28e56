"""The benchmark's drain (``flowdeck bench``, workload 7) at a small size: runs queued while nothing claims,
then drained by the bench process's own worker (SQLite, PostgreSQL) or by a worker process (PostgreSQL)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from flowdeck.bench_scale import CpuMeter, drain, parse_workers, run_scale
from flowdeck.proc_stats import cpu_seconds, preemptions
from flowdeck.settings import Settings

pytestmark = pytest.mark.slow


async def test_the_drain_completes_every_queued_run(database_url: str) -> None:
    await _drains(database_url, workers=0)  # the bench process's own worker, on both databases


async def test_a_worker_process_drains_the_queue(postgres_url: str) -> None:
    await _drains(postgres_url, workers=1)  # PostgreSQL: the only database bench --workers takes


async def _drains(database_url: str, workers: int) -> None:
    settings = replace(Settings.from_env({}), database_url=database_url, sandbox_workers=1)
    found = await drain(settings, workers, 200)
    assert found["allCompleted"], found["statuses"]
    assert found["statuses"] == {"COMPLETED": 200}
    assert found["peakRssMb"]["bench"] > 0
    assert len(found["peakRssMb"]["workers"]) == workers
    assert all(mb is not None and mb > 0 for mb in found["peakRssMb"]["workers"])


async def test_bench_workers_refuses_sqlite(tmp_path: Path) -> None:
    settings = Settings(database_url=f"sqlite+aiosqlite:///{tmp_path / 'b.db'}")
    with pytest.raises(ValueError, match="needs PostgreSQL"):
        await run_scale(settings, [0, 1], quick=True)


def test_worker_counts_are_read_from_a_list() -> None:
    assert parse_workers("0,1,2,4") == [0, 1, 2, 4]
    assert parse_workers("3") == [3]
    for wrong in ("", "a,1", "-1"):
        with pytest.raises(ValueError, match="--workers"):
            parse_workers(wrong)


async def test_the_cpu_meter_sees_the_bench_and_postgres(postgres_url: str) -> None:
    from sqlalchemy.engine import make_url

    from flowdeck.storage.database import Database

    db = Database(postgres_url)
    meter = CpuMeter([], make_url(postgres_url).database)
    try:
        async with meter.measure():
            for _ in range(300):
                async with db.read() as conn:
                    await conn.execute(sa.text("SELECT count(*) FROM generate_series(1, 2000)"))
    finally:
        await db.dispose()
    assert meter.used["bench"] > 0 and meter.used["postgres"] > 0
    assert meter.used["workers"] == [] and meter.used["workersPreempted"] == 0
    assert cpu_seconds(os.getpid()) >= meter.used["bench"]
    assert cpu_seconds(2**22 + 1) == 0.0  # no such process


def test_preemptions_count_a_process_taken_off_its_core_while_it_could_run() -> None:
    """Two busy processes held to one core take turns on it: each is preempted, again and again."""
    spin = "while True: pass"
    core = {min(os.sched_getaffinity(0))}
    busy = [subprocess.Popen([sys.executable, "-c", spin]) for _ in range(2)]
    try:
        for process in busy:
            os.sched_setaffinity(process.pid, core)
        before = [preemptions(process.pid) for process in busy]
        until_both_turned = time.monotonic() + 10
        while any(preemptions(p.pid) - b < 5 for p, b in zip(busy, before, strict=True)):
            assert time.monotonic() < until_both_turned, "two busy processes on one core were never preempted"
            time.sleep(0.01)
    finally:
        for process in busy:
            process.kill()
            process.wait()
    assert preemptions(2**22 + 1) == 0  # no such process


async def test_bench_workers_throws_away_a_first_round_of_the_first_count(monkeypatch: pytest.MonkeyPatch) -> None:
    """The first round on a fresh database runs on cold caches and empty tables, which no later N does: a
    warm-up round of the first N is run and left out of the table."""
    import flowdeck.bench_scale as bench_scale

    rounds: list[tuple[int, bool]] = []

    async def scale_round(settings: Settings, count: int, *, quick: bool, warm_up: bool = False) -> Any:
        rounds.append((count, warm_up))
        found = bench_scale.ScaleRound(count)
        found.rows["4 fan-out 1000: ms/node"] = {"value": -1.0 if warm_up else float(count), "cpu": {}}
        return found

    async def no_drain(settings: Settings, count: int, runs: int) -> dict[str, Any]:
        return {"workers": count}

    async def no_control(database_url: str, processes: int, units: int) -> dict[str, Any]:
        return {"processes": processes}

    monkeypatch.setattr(bench_scale, "_scale_round", scale_round)
    monkeypatch.setattr(bench_scale, "drain", no_drain)
    monkeypatch.setattr(bench_scale, "control_round", no_control)
    monkeypatch.setattr(bench_scale, "_print_scale", lambda *args: None)
    settings = Settings(database_url="postgresql+asyncpg://bench@127.0.0.1/unused")
    found = await run_scale(settings, [4, 2, 1], quick=True)
    assert rounds == [(4, True), (4, False), (2, False), (1, False)]
    assert [c["processes"] for c in found["control"]] == [4, 2, 1]
    assert {n: rows["4 fan-out 1000: ms/node"]["value"] for n, rows in found["workloads"].items()} == {
        4: 4.0,
        2: 2.0,
        1: 1.0,
    }


async def test_a_scale_round_says_the_work_per_node_whatever_the_cores(postgres_url: str) -> None:
    """Each workload of ``bench --workers`` gives, beside the CPU, the round trips per node of the bench process
    and the workers together and what the workers heard from the other processes (from their own /metrics
    listeners), counted over the measured runs only: a lone worker process hears no node update."""
    from flowdeck.bench_scale import _scale_round

    settings = replace(Settings.from_env({}), database_url=postgres_url, sandbox_workers=1)
    found = await _scale_round(settings, 1, quick=True)
    for name, row in found.rows.items():
        work = row["work"]
        assert work is not None, f"{name}: the worker's metrics listener did not answer"
        assert 1 <= work["roundTripsPerNode"] < 5, (name, work)  # two or three a node: warm-up runs left out
        assert work["updatesHeardPerNode"] == 0, (name, work)  # nobody else runs nodes, nobody watches
        assert row["cpu"]["workers"][0] > 0
