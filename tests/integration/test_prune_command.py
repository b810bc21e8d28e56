"""``flowdeck prune`` as an operator runs it (real processes, on SQLite and PostgreSQL): a dry run deletes
nothing and says what it would; two pruners at once delete every due run once, without an error; and a
SQLite file gives the space of the deleted runs back."""

from __future__ import annotations

import asyncio
import os
import re
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
import sqlalchemy as sa

from flowdeck.bench_history_build import copies_of
from flowdeck.domain.retention import DAY_SECONDS
from flowdeck.engine.engine import Engine
from flowdeck.engine.pruning import Pruner
from flowdeck.storage.database import Database
from flowdeck.storage.migrate import upgrade
from flowdeck.storage.schema import metadata
from flowdeck.storage.tables import instance_logs, instances
from tests.support.graphs import linear
from tests.support.handlers import make_test_registry

ROOT = Path(__file__).resolve().parents[2]
COPIES = 1500


@pytest.fixture(params=["sqlite", "postgres"])
def url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A migrated, empty database (``flowdeck prune`` migrates a SQLite file first, as ``serve`` does)."""
    if request.param == "sqlite":
        database_url = f"sqlite+aiosqlite:///{tmp_path / 'flowdeck.db'}"
        asyncio.run(upgrade(database_url))
        return database_url
    database_url = str(request.getfixturevalue("postgres_url"))
    asyncio.run(_empty(database_url))
    return database_url


async def _empty(database_url: str) -> None:
    db = Database(database_url)
    async with db.transaction() as conn:
        names = ", ".join(f'"{t.name}"' for t in reversed(metadata.sorted_tables))
        await conn.execute(sa.text(f"TRUNCATE {names} RESTART IDENTITY CASCADE"))
    await db.dispose()


async def old_runs(database_url: str, copies: int = COPIES) -> int:
    """One real run, and ``copies`` copies of it made 100 days ago: every one is past the 30 days."""
    db = Database(database_url)
    engine = Engine(db, make_test_registry(), poll_interval=0.05)
    await engine.start()
    try:
        tenant_id = await engine.tenants.ensure("acme")
        workflow = await engine.create_workflow(tenant_id, linear(3))
        run_id = await engine.start_workflow_run(tenant_id, workflow.id, {})
        await engine.wait_for_run(run_id, 20)
        await copies_of(db, run_id, copies, first_at=time.time() - 100 * DAY_SECONDS, spacing=1.0)
    finally:
        await engine.stop()
        await db.dispose()
    return copies


async def counts(database_url: str) -> tuple[int, int]:
    db = Database(database_url)
    try:
        async with db.read() as conn:
            runs = (await conn.execute(sa.select(sa.func.count()).select_from(instances))).scalar_one()
            logs = (await conn.execute(sa.select(sa.func.count()).select_from(instance_logs))).scalar_one()
    finally:
        await db.dispose()
    return int(runs), int(logs)


def prune_process(database_url: str, *args: str) -> subprocess.Popen[str]:
    env = {**os.environ, "FLOWDECK_DATABASE_URL": database_url}
    return subprocess.Popen(
        [sys.executable, "-m", "flowdeck", "prune", *args],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def finish(process: subprocess.Popen[str]) -> str:
    try:
        out, err = process.communicate(timeout=120)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert process.returncode == 0, err
    return out


async def test_a_dry_run_deletes_nothing_and_prints_the_counts(url: str) -> None:
    made = await old_runs(url)
    before = await counts(url)

    out = finish(prune_process(url, "--dry-run"))

    assert f"acme: would delete {made} runs ({made} production, 0 test)" in out
    assert "nothing was deleted" in out
    assert await counts(url) == before


async def test_two_pruners_at_once_delete_each_run_once(url: str) -> None:
    made = await old_runs(url)
    _, logs_before = await counts(url)

    first, second = prune_process(url), prune_process(url)
    outputs = [finish(first), finish(second)]

    totals = [int(re.search(r"deleted (\d+) runs in total", out).group(1)) for out in outputs]  # type: ignore[union-attr]
    assert sum(totals) == made, outputs
    assert await counts(url) == (1, logs_before // (made + 1))  # the real run is fresh: only it is left


async def test_two_pruners_in_one_process_share_the_work(url: str) -> None:
    made = await old_runs(url, 600)
    dbs = [Database(url), Database(url)]
    try:
        pruners = [Pruner(db, Engine(db, make_test_registry()).pruner.defaults, batch_size=25) for db in dbs]
        if dbs[0].is_sqlite:  # one event loop, one SQLite file: the two connections would wait on each other
            reports = [await pruners[0].prune(), await pruners[1].prune()]
        else:
            reports = list(await asyncio.gather(pruners[0].prune(), pruners[1].prune()))
    finally:
        for db in dbs:
            await db.dispose()
    assert sum(t.total for report in reports for t in report) == made
    assert (await counts(url))[0] == 1


async def test_the_sqlite_file_shrinks_after_pruning(tmp_path: Path) -> None:
    database_url = f"sqlite+aiosqlite:///{tmp_path / 'flowdeck.db'}"
    await upgrade(database_url)
    await old_runs(database_url, 3000)
    path = tmp_path / "flowdeck.db"
    with sqlite3.connect(path) as conn:
        assert conn.execute("PRAGMA auto_vacuum").fetchone()[0] == 2  # INCREMENTAL, set by migration 0014
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    before = path.stat().st_size

    out = finish(prune_process(database_url, "--fast"))

    assert "acme: deleted 3000 runs" in out
    after = path.stat().st_size
    assert after < before / 5, (before, after)


async def test_migration_0014_turns_an_existing_sqlite_file_to_incremental_vacuum(tmp_path: Path) -> None:
    from alembic import command

    from flowdeck.storage.migrate import alembic_config

    path = tmp_path / "old.db"
    database_url = f"sqlite+aiosqlite:///{path}"
    with sqlite3.connect(path) as conn:
        conn.execute("PRAGMA auto_vacuum = NONE")  # a file made before this change
    await asyncio.to_thread(command.upgrade, alembic_config(database_url), "0011")
    with sqlite3.connect(path) as conn:
        assert conn.execute("PRAGMA auto_vacuum").fetchone()[0] == 0
        conn.execute("INSERT INTO tenants (id, name, created_at) VALUES ('t1', 'acme', 1.0)")

    await upgrade(database_url)

    with sqlite3.connect(path) as conn:
        assert conn.execute("PRAGMA auto_vacuum").fetchone()[0] == 2
        assert conn.execute("SELECT name FROM tenants").fetchall() == [("acme",)]  # nothing lost
        assert conn.execute("SELECT count(*) FROM tenant_retention").fetchone()[0] == 0
