"""Builds a running Flowdeck from Settings: database, migrations, handlers, sandbox pool and engine.

The one place that wires these together; ``serve``, ``worker``, ``run`` and ``bench`` all use it.
"""

from __future__ import annotations

import gc
import logging
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass

from flowdeck import examples
from flowdeck.domain.labels import LabelLimits
from flowdeck.engine.engine import Engine
from flowdeck.engine.fanout import Fanout, Transport, read_back
from flowdeck.engine.pg_notify import PostgresTransport
from flowdeck.engine.redis_bridge import RedisTransport
from flowdeck.engine.run_limits import RunLimits
from flowdeck.handlers.base import NodeHandler
from flowdeck.handlers.data_query import DataQueryHandler
from flowdeck.handlers.http_request import HttpRequestHandler
from flowdeck.handlers.python_code import PythonCodeHandler
from flowdeck.handlers.registry import HandlerRegistry, builtin_handlers
from flowdeck.notifications.notifier import Notifier
from flowdeck.queries.engine import QueryEngine
from flowdeck.queries.secrets import SecretBox
from flowdeck.queries.service import DataService
from flowdeck.queries.store import DataSourceStore
from flowdeck.sandbox.pool import SandboxPool
from flowdeck.settings import Settings
from flowdeck.storage.database import Database
from flowdeck.storage.migrate import require_latest, upgrade
from flowdeck.storage.reachable import wait_until_reachable
from flowdeck.triggers.schedules import Scheduler

__all__ = ("Runtime", "build_query_engine", "freeze_startup_heap", "open_runtime")

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Runtime:
    settings: Settings
    db: Database
    engine: Engine
    sandbox: SandboxPool
    data: DataService
    scheduler: Scheduler | None = None
    """Fires the workflows' schedules (SPEC §8); runs wherever a worker runs."""
    notifier: Notifier | None = None
    """Sends the failure and SLA-breach notices (a worker sweep hook wherever a worker runs)."""
    fanout: Fanout | None = None
    """Joins this process to the others (none: it runs alone)."""


@asynccontextmanager
async def open_runtime(
    settings: Settings,
    *,
    with_worker: bool = True,
    migrate: bool = True,
    extra_handlers: Sequence[NodeHandler] = (),
    with_scheduler: bool = True,
    transport: Transport | None = None,
    hears_run_ends: bool = True,
) -> AsyncIterator[Runtime]:
    """Open the database (migrating it first when asked), start the engine, close everything after.

    ``transport`` carries live updates, wake-ups and revocations to the other processes instead of what
    the settings choose (serve's pipes to its worker processes and theirs back: ``engine/pipe_transport.py``).
    ``hears_run_ends`` false: this process wants only the failed runs' ends from the others (``flowdeck
    worker``: no client waits there for a run to end; ``engine/fanout.py``).

    ``extra_handlers`` adds node types to the built-in ones (the benchmark's no-op). The scheduler runs
    with the worker (``flowdeck serve`` and ``flowdeck worker``) unless ``with_scheduler`` is false.
    """
    queries = build_query_engine(settings)  # first: a bad FLOWDECK_HTTP_ALLOW is refused before anything opens
    await wait_until_reachable(settings.database_url, settings.db_reconnect_seconds)
    if migrate:
        await upgrade(settings.database_url)
    else:
        await require_latest(settings.database_url)  # a process of one version on another's schema: refused
    db = Database(
        settings.database_url,
        pool_size=settings.db_pool_size,
        sqlite_synchronous=settings.sqlite_synchronous,
        reconnect_seconds=settings.db_reconnect_seconds,
        application_name=settings.db_application_name,
    )
    sandbox = SandboxPool(
        settings.sandbox_workers, max_size=settings.sandbox_max_workers, idle_seconds=settings.sandbox_idle_seconds
    )
    # Secrets are keyed by the configured FLOWDECK_SECRET_KEY only: a generated key would make
    # stored secrets unreadable after a restart.
    sources = DataSourceStore(db, SecretBox(settings.secret_key or None))
    labels = LabelLimits(settings.max_run_labels, settings.max_label_chars)
    registry = HandlerRegistry(
        [
            *builtin_handlers(),
            PythonCodeHandler(sandbox),
            DataQueryHandler(sources, queries),
            HttpRequestHandler(sources, queries),
            *extra_handlers,
        ]
    )
    engine = Engine(
        db,
        registry,
        concurrency=settings.worker_concurrency,
        tenant_concurrency=settings.tenant_concurrency,
        lease_seconds=settings.lease_seconds,
        poll_interval=settings.poll_interval_seconds,
        limits=RunLimits(settings.max_tree_runs, settings.tenant_active_runs, settings.max_run_bytes),
        label_limits=labels,
        max_wait_seconds=settings.max_wait_seconds,
        retention=settings.retention,
        priority_step_seconds=settings.priority_step_seconds,
    )
    notifier = Notifier(engine, SecretBox(settings.secret_key or None), queries.outbound)
    if with_worker:
        engine.worker.sweep_hooks.append(notifier.sweep_hook)
    bridge = _fanout(settings, engine, db, with_worker=with_worker, transport=transport, hears_run_ends=hears_run_ends)
    scheduler = Scheduler(engine) if with_worker and with_scheduler else None
    try:
        if with_worker:
            await sandbox.start()
        if bridge is not None:  # before the worker: the nodes it runs reach the processes that watch them
            await bridge.start()
        await engine.start(with_worker=with_worker)
        if scheduler is not None:
            engine.definition_listeners.append(scheduler.poke)  # a new or changed schedule counts at once
            await scheduler.start()
        yield Runtime(settings, db, engine, sandbox, DataService(sources, queries), scheduler, notifier, bridge)
    finally:
        if scheduler is not None:
            await scheduler.stop()
        if bridge is not None:
            await bridge.stop()
        await engine.stop(grace=settings.shutdown_grace)
        await sandbox.close()
        await notifier.close()
        await queries.close()
        await db.dispose()


def _fanout(
    settings: Settings,
    engine: Engine,
    db: Database,
    *,
    with_worker: bool,
    transport: Transport | None,
    hears_run_ends: bool,
) -> Fanout | None:
    """Live updates, revocations and wake-ups across processes: over ``transport`` when given, else Redis
    when configured, else PostgreSQL's LISTEN/NOTIFY; SQLite alone is one process and needs none."""
    transport = transport or _configured_transport(settings)
    if transport is None:
        return None
    fanout = Fanout(transport, engine.publisher, resolve=read_back(db), hears_run_ends=hears_run_ends)
    engine.orchestrator.job_listeners.append(fanout.job_queued)
    if with_worker:
        fanout.wake_listeners.append(engine.worker.notify)
    return fanout


def _configured_transport(settings: Settings) -> Transport | None:
    if settings.redis_url:
        return RedisTransport(settings.redis_url)
    if not settings.is_sqlite:
        return PostgresTransport(settings.database_url, application_name=settings.db_application_name)
    return None


def build_query_engine(settings: Settings) -> QueryEngine:
    """The query engine of a running Flowdeck: where data sources may point, from the settings."""
    return QueryEngine(
        sqlite_dirs=settings.sqlite_dirs,
        sqlite_read_only_dirs=(str(examples.DATA_DIR),),  # the examples' shared data: always allowed, never written
        own_database_url=settings.database_url,
        http_allow=settings.http_allow,
    )


def freeze_startup_heap() -> None:
    """Move everything alive after start-up (modules, the app, compiled statements) out of the garbage
    collector's way: full collections then skip it. Measured: a full collection of the serve process
    took 130-200 ms and landed on requests (a workflow GET answered in 250 ms instead of 35)."""
    gc.collect()
    gc.freeze()
