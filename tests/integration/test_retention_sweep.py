"""The pruner in the worker's sweep (issue 22): the server's defaults come from FLOWDECK_RETENTION_*, a
pass runs on its own once a minute beside the engine, and ``flowdeck_runs_pruned_total`` counts it."""

from __future__ import annotations

import asyncio
import re
import time
from pathlib import Path

import pytest

from flowdeck.bench_history_build import copies_of
from flowdeck.domain.retention import DAY_SECONDS, RetentionPolicy
from flowdeck.engine.engine import Engine
from flowdeck.observability.metrics import Metrics, observe_engine
from flowdeck.runtime import open_runtime
from flowdeck.settings import Settings
from flowdeck.storage.database import Database
from tests.integration.test_retention import FOREVER, TickingClock, existing
from tests.support.graphs import linear
from tests.support.handlers import make_test_registry


def test_the_retention_defaults_are_read_from_the_environment() -> None:
    settings = Settings.from_env(
        {"FLOWDECK_RETENTION_DAYS": "90", "FLOWDECK_RETENTION_TEST_DAYS": "0", "FLOWDECK_RETENTION_MAX_RUNS": "5000"}
    )
    assert settings.retention == RetentionPolicy(max_age_days=90, test_max_age_days=0, max_runs=5000)
    assert Settings.from_env({}).retention == RetentionPolicy(30, 7, 100_000)
    with pytest.raises(ValueError, match="FLOWDECK_RETENTION_DAYS must be an integer"):
        Settings.from_env({"FLOWDECK_RETENTION_DAYS": "a month"})
    with pytest.raises(ValueError, match="FLOWDECK_RETENTION_MAX_RUNS must be at least 0"):
        Settings.from_env({"FLOWDECK_RETENTION_MAX_RUNS": "-1"})
    with pytest.raises(ValueError, match="FLOWDECK_RETENTION_TEST_DAYS must be at most 36500"):
        Settings.from_env({"FLOWDECK_RETENTION_TEST_DAYS": "100000"})


async def test_a_running_flowdeck_prunes_by_the_configured_defaults(tmp_path: Path) -> None:
    env = {"FLOWDECK_DATABASE_URL": f"sqlite+aiosqlite:///{tmp_path / 'flowdeck.db'}", "FLOWDECK_RETENTION_DAYS": "3"}
    async with open_runtime(Settings.from_env(env), with_scheduler=False) as runtime:
        assert runtime.engine.pruner.defaults == RetentionPolicy(3, 7, 100_000)
        assert runtime.engine.pruner.sweep_hook in runtime.engine.worker.sweep_hooks


async def test_the_workers_sweep_prunes_once_a_minute_and_counts_it(db: Database) -> None:
    clock = TickingClock()
    engine = Engine(db, make_test_registry(), lease_seconds=2.0, poll_interval=0.05, clock=clock)
    metrics = Metrics()
    observe_engine(metrics, engine)
    await engine.start()
    try:
        tenant_id = await engine.tenants.ensure("acme")
        workflow = await engine.create_workflow(tenant_id, linear(2))
        run_id = await engine.start_workflow_run(tenant_id, workflow.id, {})
        await engine.wait_for_run(run_id, 20)
        old = await copies_of(db, run_id, 5, first_at=clock() - 40 * DAY_SECONDS, spacing=1.0)

        clock.advance(61)  # a minute on: the next sweep starts a pass
        deadline = time.monotonic() + 20
        counted = re.compile(r"^flowdeck_runs_pruned_total 5\.0$", re.MULTILINE)
        # The pass's batches count once they are committed (a read may see the runs gone a moment before).
        while not counted.search(text := (await metrics.render()).decode()) and time.monotonic() < deadline:
            await asyncio.sleep(0.05)

        assert counted.search(text), text
        assert await existing(db, [*old, run_id]) == {run_id}
    finally:
        await engine.stop()


async def test_an_interval_set_after_the_engine_started_holds_from_the_next_sweep(db: Database) -> None:
    """``flowdeck bench --prune`` turns the sweep's passes off once its engine runs: a pass started by a
    sweep beside its own would split the batches with it, and its report would count part of them."""
    clock = TickingClock()
    engine = Engine(db, make_test_registry(), lease_seconds=2.0, poll_interval=0.05, clock=clock)
    swept_after = asyncio.Event()
    minute_on = clock() + 61

    async def note_sweep(now: float) -> None:
        if now >= minute_on:
            swept_after.set()

    await engine.start()
    try:
        tenant_id = await engine.tenants.ensure("acme")
        workflow = await engine.create_workflow(tenant_id, linear(2))
        run_id = await engine.start_workflow_run(tenant_id, workflow.id, {})
        await engine.wait_for_run(run_id, 20)  # sweeps ran meanwhile: the first pass is due a minute on
        old = await copies_of(db, run_id, 5, first_at=clock() - 40 * DAY_SECONDS, spacing=1.0)

        engine.pruner.interval = FOREVER
        engine.worker.sweep_hooks.append(note_sweep)
        clock.advance(61)
        await asyncio.wait_for(swept_after.wait(), 20)
        # A pass the sweep had started would hold the pruner: this one waits for it, then finds nothing.
        report = await engine.pruner.prune(dry_run=True)

        assert sum(tenant.total for tenant in report) == 5
        assert await existing(db, old) == set(old)
    finally:
        await engine.stop()
