"""Upgrades from every earlier schema: a database Alembic built at each earlier revision, holding the rows
an older Flowdeck would have written (tests/support/old_schemas.py), is migrated to the latest revision
by ``flowdeck migrate``'s own code, on SQLite and on PostgreSQL. Then every run reads back as the API
shows it, every unfinished run completes once the engine runs, and every secret still decrypts.

The revisions come from the versions folder: a new migration is covered without touching this file.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa
from alembic import command
from sqlalchemy.ext.asyncio import create_async_engine

from flowdeck.accounts.credentials import hash_secret
from flowdeck.accounts.passwords import PasswordService
from flowdeck.accounts.rate_limit import LoginRateLimiter
from flowdeck.accounts.service import AccountsService
from flowdeck.api.services.definition_checks import SaveChecks
from flowdeck.api.services.runs import RunService
from flowdeck.domain.statuses import RunStatus
from flowdeck.engine.engine import Engine
from flowdeck.handlers.python_code import PythonCodeHandler
from flowdeck.handlers.registry import HandlerRegistry, builtin_handlers
from flowdeck.notifications.notifier import Notifier
from flowdeck.notifications.secrets import NotificationSecrets
from flowdeck.outbound import OutboundPolicy
from flowdeck.queries.secrets import SecretBox
from flowdeck.queries.store import DataSourceStore
from flowdeck.sandbox.pool import SandboxPool
from flowdeck.storage.database import Database
from flowdeck.storage.migrate import alembic_config, upgrade
from flowdeck.storage.run_queries import RunFilter, RunQueries
from flowdeck.storage.tables import instances, node_jobs
from flowdeck.storage.webhooks import WebhookStore
from flowdeck.storage.widgets import WidgetStore
from tests.conftest import scratch_database
from tests.integration.test_drain import process, read_until
from tests.support.old_schemas import HEAD, REVISIONS, SECRET_KEY, SINCE, Seed, at_or_after, make_seed, write_seed

EARLIER = REVISIONS[:-1]
FLOWDECK = [sys.executable, "-m", "flowdeck"]


@pytest.fixture(scope="session")
def seed(tmp_path_factory: pytest.TempPathFactory) -> Seed:
    path = tmp_path_factory.mktemp("seed") / "seed.db"
    return asyncio.run(make_seed(f"sqlite+aiosqlite:///{path}"))


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def fresh_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """An empty database of its own (Alembic builds every table, from the first revision on)."""
    if request.param == "sqlite":
        yield f"sqlite+aiosqlite:///{tmp_path / 'old.db'}"
        return
    request.getfixturevalue("postgres_url")  # skips without a server (fails under CI=true)
    with scratch_database("flowdeck_upgrade", schema=False) as url:
        yield url


async def _old_database(url: str, revision: str, seed: Seed) -> int:
    await asyncio.to_thread(command.upgrade, alembic_config(url), revision)
    engine = create_async_engine(url)
    try:
        async with engine.begin() as conn:
            return await conn.run_sync(write_seed, seed, revision)
    finally:
        await engine.dispose()


@pytest.fixture
async def running() -> AsyncIterator[list[tuple[Database, Engine, SandboxPool]]]:
    """What a test opens on the upgraded database, closed here even when the test fails."""
    opened: list[tuple[Database, Engine, SandboxPool]] = []
    yield opened
    for db, engine, sandbox in opened:
        await engine.stop()
        await sandbox.close()
        await db.dispose()


@pytest.mark.parametrize("revision", EARLIER)
async def test_a_database_at_an_earlier_revision_upgrades_with_every_run_and_secret(
    revision: str, seed: Seed, fresh_url: str, running: list[tuple[Database, Engine, SandboxPool]]
) -> None:
    written = await _old_database(fresh_url, revision, seed)
    assert written > 0

    migration = await upgrade(fresh_url)  # what `flowdeck migrate` and `serve` run
    assert (migration.before, migration.head) == (revision, HEAD)

    db = Database(fresh_url)
    sandbox = SandboxPool(1)
    await sandbox.start()
    engine = Engine(db, HandlerRegistry([*builtin_handlers(), PythonCodeHandler(sandbox)]), poll_interval=0.05)
    running.append((db, engine, sandbox))
    queries = RunQueries(db, engine.state)
    runs = RunService(engine, queries, SaveChecks(engine, Notifier(engine, SecretBox(None), OutboundPolicy())))
    tenant, expected = seed.tenant_id, seed.runs_at(revision)

    listed, _ = await queries.list_runs(tenant, RunFilter(), None, 500)
    assert sorted(run.id for run in listed) == sorted(expected)
    for run_id in expected:  # the run detail, its log and timeline, as GET /api/runs/{id}/... answer them
        detail = await runs.detail(tenant, run_id)
        assert detail.status.value == seed.status[run_id] and detail.nodes
        events = await runs.events(tenant, run_id, None, 1000)
        logged = [row for row in seed.rows["instance_logs"] if row["instance_id"] == run_id]
        assert [e.event_type for e in events.items] == [row["event_type"] for row in logged]
        assert await queries.timeline(tenant, run_id)

    async with db.read() as conn:  # the queue's rows carry their run's tenant (fair share), as new ones do
        jobs = (
            await conn.execute(
                sa.select(node_jobs.c.tenant_id, instances.c.tenant_id).join(
                    instances, instances.c.id == node_jobs.c.instance_id
                )
            )
        ).all()
    assert jobs and all(job_tenant == run_tenant for job_tenant, run_tenant in jobs)

    await engine.start()
    unfinished = seed.unfinished_at(revision)
    assert unfinished, "every revision has runs left unfinished by the old version"
    for run_id in unfinished:
        finished = await engine.wait_for_run(run_id, 60)
        assert finished.status == RunStatus.COMPLETED, (run_id, finished.error)

    box = SecretBox(SECRET_KEY)
    if at_or_after(revision, SINCE["data"]):
        source = await DataSourceStore(db, box).get_source(tenant, seed.data_source_id)
        assert source is not None and DataSourceStore(db, box).secrets_of(source) == seed.data_secrets
    if at_or_after(revision, SINCE["accounts"]):
        accounts = AccountsService(db, PasswordService(), LoginRateLimiter(db))
        principal = await accounts.authenticate_token(seed.api_token)
        assert principal is not None and principal.tenant_id == tenant
    if at_or_after(revision, SINCE["widgets"]):
        widgets = WidgetStore(db)
        widget = await widgets.get(tenant, seed.widget_id)
        assert widget is not None and widget.config == {"valuePath": "score", "label": "Score"}
        assert await widgets.completed_runs(tenant, widget.workflow_id)  # what the widget shows
        grant = await widgets.grant(hash_secret(seed.embed_token))  # an embed page's token
        assert grant is not None and grant.widget.id == widget.id and grant.token.revoked_at is None
    if "0007" in REVISIONS and at_or_after(revision, "0007"):
        target = await WebhookStore(db).target(seed.webhook_workflow)
        assert target is not None and target.secret_hash == hash_secret(seed.webhook_secret)
    if "0009" in REVISIONS and at_or_after(revision, "0009"):
        assert await NotificationSecrets(db, box).key(seed.notification_workflow) == seed.notification_key


async def test_a_worker_refuses_a_database_at_another_revision_until_it_is_migrated(fresh_url: str) -> None:
    """Processes that do not migrate (workers; serve on PostgreSQL) run only on their own version's schema."""
    env = {**os.environ, "FLOWDECK_DATABASE_URL": fresh_url, "FLOWDECK_SANDBOX_WORKERS": "1"}

    def worker() -> subprocess.CompletedProcess[str]:
        return subprocess.run([*FLOWDECK, "worker"], env=env, capture_output=True, text=True, timeout=60, check=False)

    empty = worker()
    assert empty.returncode == 2 and "the database has no Flowdeck schema yet: run `flowdeck migrate`" in empty.stderr
    older = REVISIONS[-2]
    await asyncio.to_thread(command.upgrade, alembic_config(fresh_url), older)
    behind = worker()
    assert behind.returncode == 2, behind.stderr
    assert f"the database is at schema revision {older} and this version of Flowdeck needs {HEAD}" in behind.stderr
    await _set_revision(fresh_url, "9999")  # as a newer version would leave it
    ahead = worker()
    assert ahead.returncode == 2 and "is at schema revision 9999, which this version of Flowdeck" in ahead.stderr

    await _set_revision(fresh_url, older)
    assert (await upgrade(fresh_url)).head == HEAD
    with process([*FLOWDECK, "worker"], env) as started:
        read_until(started, "running")
        os.killpg(started.pid, signal.SIGTERM)
        assert started.wait(30) == 0


async def _set_revision(url: str, revision: str) -> None:
    engine = create_async_engine(url)
    try:
        async with engine.begin() as conn:
            await conn.execute(sa.text("UPDATE alembic_version SET version_num = :r"), {"r": revision})
    finally:
        await engine.dispose()
