"""``flowdeck bench --prune N``: the engine's throughput while the pruner deletes N runs beside it, and
how long the pruner's transactions take. The runs are made by copying a real one (also for the retention
tests): every row of the run, its instance and its log, inserted again under new ids at other times."""

from __future__ import annotations

import asyncio
import statistics
import sys
import time
import uuid
from typing import Any

import sqlalchemy as sa

from flowdeck.bench_history_build import copies_of
from flowdeck.domain.retention import DAY_SECONDS
from flowdeck.settings import Settings
from flowdeck.storage.database import Database
from flowdeck.storage.retention import Deleted

__all__ = ("run_prune_bench",)


async def run_prune_bench(settings: Settings, runs: int, *, rounds: int = 5, json_path: str | None = None) -> int:
    """``flowdeck bench --prune N``: rounds of 100 concurrent chains of 5 alone, then while the pruner
    deletes N copied runs beside them, then alone again; the throughput of both, and how long each
    delete transaction and each SQLite vacuum step took."""
    from flowdeck.bench import WARM_ROUNDS, NoopHandler, _Bench, chain, open_bench_runtime
    from flowdeck.bench import _write_json as write_json

    async with open_bench_runtime(
        settings, migrate=settings.is_sqlite, extra_handlers=[NoopHandler()], with_scheduler=False
    ) as runtime:
        engine = runtime.engine
        engine.pruner.interval = float("inf")  # only the pass this benchmark starts
        bench = _Bench(engine, await engine.tenants.ensure(f"bench-prune-{uuid.uuid4().hex[:6]}"))
        engine.worker.tenant_concurrency = engine.worker.concurrency
        try:
            workflow = await engine.create_workflow(bench.tenant_id, chain(5))
            model = await engine.start_workflow_run(bench.tenant_id, workflow.id, {})
            await bench.finished(model)
            started = time.perf_counter()
            await copies_of(engine.db, model, runs, first_at=time.time() - 400 * DAY_SECONDS, spacing=0.01)
            copy_seconds = time.perf_counter() - started
            print(f"copied {runs} runs in {copy_seconds:.1f} s", file=sys.stderr)  # noqa: T201
            stand_in = await _vacuum_after_copying(engine.db)
            await _round(bench, warm_rounds=WARM_ROUNDS)  # warms the connections; not counted
            alone = [await _round(bench) for _ in range(rounds)]
            batches: list[float] = []
            slow: list[Deleted] = []
            engine.pruner.listeners.append(lambda deleted: _note_batch(deleted, batches, slow))
            steps = _time_vacuum_steps(engine.db)
            started = time.perf_counter()
            pruning = asyncio.create_task(engine.pruner.prune())
            beside: list[float] = []
            while not pruning.done() or not beside:
                beside.append(await _round(bench))
            report = await pruning
            prune_seconds = time.perf_counter() - started
            alone += [await _round(bench) for _ in range(rounds)]  # after it too: the machine's load drifts
        finally:
            if stand_in is not None:
                stand_in.cancel()
            await bench.close()
    pruned = sum(t.total for t in report)
    found = {
        "runsPruned": pruned,
        "pruneSeconds": round(prune_seconds, 1),
        "runsPrunedPerSecond": round(pruned / prune_seconds),
        "concurrentRunsPerSecondAlone": [round(r, 1) for r in alone],
        "concurrentRunsPerSecondWhilePruning": [round(r, 1) for r in beside],
        "throughputRatio": round(statistics.median(beside) / statistics.median(alone), 2),
        "batches": len(batches),
        "batchMsP50": round(statistics.median(batches) * 1000, 1) if batches else None,
        "batchMsP99": round(sorted(batches)[int(len(batches) * 0.99)] * 1000, 1) if batches else None,
        "batchMsMax": round(max(batches) * 1000, 1) if batches else None,
        "batchesOver100Ms": len(slow),
        "slowBatchesMsCpuMsAndFullGcs": [
            [
                round(d.seconds * 1000, 1),
                None if d.cpu_seconds is None else round(d.cpu_seconds * 1000, 1),
                d.full_collections,
            ]
            for d in slow[:_SLOW_SHOWN]
        ],
        "vacuumSteps": len(steps),
        "vacuumStepMsMax": round(max(steps) * 1000, 1) if steps else None,
        "vacuumSecondsTotal": round(sum(steps), 2),
    }
    for key, value in found.items():
        print(f"{key:38} {value}")  # noqa: T201
    return await write_json(json_path, settings, {"prune": found})


_SLOW_SECONDS = 0.1
"""A batch holding its locks longer than this is listed (issue 22's bound), with its CPU time beside it."""
_SLOW_SHOWN = 20


def _note_batch(deleted: Deleted, batches: list[float], slow: list[Deleted]) -> None:
    batches.append(deleted.seconds)
    if deleted.seconds > _SLOW_SECONDS:
        slow.append(deleted)


async def _round(bench: Any, warm_rounds: int = 0) -> float:
    """One round of 100 concurrent chains of 5: its runs per second (the rounds after the first find the
    connections warm: no warm-up of their own)."""
    from flowdeck.bench import chain

    result = await bench.concurrent(chain(5), 100, "100 concurrent chains of 5", "", warm_rounds=warm_rounds)
    return float(result.runs / result.seconds)


_HOT_TABLES = ("instances", "instance_logs", "node_jobs")


async def _vacuum_after_copying(db: Database) -> asyncio.Task[None] | None:
    """PostgreSQL: what autovacuum would have done after the copy (fresh statistics, no dead rows), so the
    measurement starts from the state a running server is in. When autovacuum is off on this server (as on
    a CI machine), a stand-in does its work during the benchmark, said so (docs/operations.md, "Autovacuum"):
    without it the engine's queue table bloats and the figures say nothing about a real server."""
    if db.is_sqlite:
        return None
    async with db.autocommit() as conn:
        for table in _HOT_TABLES:
            await conn.execute(sa.text(f"VACUUM (ANALYZE) {table}"))
        autovacuum = (await conn.execute(sa.text("SHOW autovacuum"))).scalar()
    if autovacuum == "on":
        return None
    print(  # noqa: T201
        "PostgreSQL's autovacuum is off on this server: the benchmark vacuums as autovacuum's defaults would",
        file=sys.stderr,
    )
    return asyncio.create_task(_autovacuum_stand_in(db), name="bench-autovacuum-stand-in")


AUTOVACUUM_NAPTIME = 60.0
"""PostgreSQL's defaults: every ``autovacuum_naptime`` a table is vacuumed once its dead rows pass
``autovacuum_vacuum_threshold`` + ``autovacuum_vacuum_scale_factor`` times its live rows."""
AUTOVACUUM_THRESHOLD = 50
AUTOVACUUM_SCALE_FACTOR = 0.2


async def _autovacuum_stand_in(db: Database) -> None:
    while True:
        await asyncio.sleep(AUTOVACUUM_NAPTIME)
        async with db.autocommit() as conn:
            counts = await conn.execute(
                sa.text("SELECT relname, n_live_tup, n_dead_tup FROM pg_stat_user_tables WHERE relname = ANY(:tables)"),
                {"tables": list(_HOT_TABLES)},
            )
            for table, live, dead in counts.all():
                if dead > AUTOVACUUM_THRESHOLD + AUTOVACUUM_SCALE_FACTOR * live:
                    await conn.execute(sa.text(f"VACUUM (ANALYZE) {table}"))


def _time_vacuum_steps(db: Database) -> list[float]:
    """Time every ``reclaim_space`` step from now on (the SQLite vacuum runs on the event loop)."""
    steps: list[float] = []
    reclaim = db.reclaim_space

    async def timed(pages: int) -> int:
        started = time.perf_counter()
        try:
            return await reclaim(pages)
        finally:
            steps.append(time.perf_counter() - started)

    db.reclaim_space = timed  # type: ignore[method-assign]
    return steps
