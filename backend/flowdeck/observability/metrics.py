"""Prometheus metrics (``GET /metrics``): what the engine, the queue, the sandbox and Socket.IO are doing.

A scrape reads gauges cached for ``max_age`` (1 s): however many scrapers, a process reads the
database for them at most once a second, and scrapes that arrive during that read share it.

One registry per process, never the library's global one, so two apps in one test process don't
share counters. No label names a tenant, a workflow or a run: their number is unbounded (every new
run would be a new time series) and they would tell a scraper who runs what.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Iterator

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.core import CounterMetricFamily, Metric

from flowdeck.domain.statuses import TERMINAL_RUN_STATUSES, NodeStatus
from flowdeck.engine.engine import Engine
from flowdeck.engine.fanout import MESSAGE_KINDS, FanoutTraffic
from flowdeck.engine.publisher import NodeUpdate, RunUpdate, Update
from flowdeck.sandbox.pool import SandboxPool
from flowdeck.storage.queue_stats import QueueStats, read_queue_stats
from flowdeck.storage.sqlite_engine import StatementCounter

__all__ = ("CONTENT_TYPE", "Metrics", "ScrapeSources", "observe_engine")

CONTENT_TYPE = CONTENT_TYPE_LATEST

log = logging.getLogger(__name__)

_NODE_SECONDS_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300)


class ScrapeSources:
    """Where the gauges read their values at scrape time (each optional: a worker has no Socket.IO)."""

    def __init__(
        self,
        *,
        queue: Callable[[], Awaitable[QueueStats]] | None = None,
        sandbox: Callable[[], tuple[int, int]] | None = None,
        connections: Callable[[], int] | None = None,
        database: tuple[StatementCounter, bool] | None = None,
        fanout: FanoutTraffic | None = None,
    ) -> None:
        self.queue = queue
        self.sandbox = sandbox
        """() -> (busy, idle) sandbox processes."""
        self.connections = connections
        self.database = database
        """The engine's database counters, and whether it is SQLite (read as they stand at each scrape)."""
        self.fanout = fanout
        """What this process sent to and heard from the other processes (none: it runs alone)."""


class _DatabaseCounters:
    """``flowdeck_db_*`` and, on SQLite, ``flowdeck_sqlite_write_lock_*``: counters the ``Database`` keeps
    (storage/sqlite_engine.py ``StatementCounter``), read at scrape time rather than copied on every statement."""

    def __init__(self, sources: ScrapeSources) -> None:
        self._sources = sources

    def describe(self) -> list[Metric]:
        return []  # the names come and go with the database: nothing to check at registration

    def collect(self) -> Iterator[Metric]:
        if self._sources.database is None:
            return
        counter, is_sqlite = self._sources.database
        yield CounterMetricFamily(
            "flowdeck_db_round_trips", "Statements, BEGINs and COMMITs this process sent.", value=counter.round_trips
        )
        yield CounterMetricFamily(
            "flowdeck_db_commits",
            "COMMITs this process sent (PostgreSQL's single-statement writes commit by themselves, uncounted).",
            value=counter.commits,
        )
        if is_sqlite:
            yield CounterMetricFamily(
                "flowdeck_sqlite_write_lock_held_seconds",
                "Seconds this process held the database file's one write lock (its group transactions).",
                value=counter.write_lock_held_seconds,
            )
            yield CounterMetricFamily(
                "flowdeck_sqlite_write_lock_wait_seconds",
                "Seconds this process waited for another process to let go of the write lock.",
                value=counter.write_lock_wait_seconds,
            )


class _FanoutCounters:
    """``flowdeck_fanout_*``: the messages joining this process to the others (engine/fanout.py
    ``FanoutTraffic``), read at scrape time."""

    def __init__(self, sources: ScrapeSources) -> None:
        self._sources = sources

    def describe(self) -> list[Metric]:
        return []

    def collect(self) -> Iterator[Metric]:
        traffic = self._sources.fanout
        if traffic is None:
            return
        for direction, by_kind, updates in (
            ("sent", traffic.sent, traffic.updates_sent),
            ("received", traffic.received, traffic.updates_received),
        ):
            where = "to" if direction == "sent" else "from"
            messages = CounterMetricFamily(
                f"flowdeck_fanout_messages_{direction}",
                f"Messages this process {direction} {where} the other processes, by what they carry.",
                labels=["kind"],
            )
            for kind in MESSAGE_KINDS:
                messages.add_metric([kind], by_kind.get(kind, 0))
            yield messages
            yield CounterMetricFamily(
                f"flowdeck_fanout_updates_{direction}",
                f"Node and run updates this process {direction} {where} the other processes.",
                value=updates,
            )


class Metrics:
    def __init__(self, *, max_age: float = 1.0, clock: Callable[[], float] = time.monotonic) -> None:
        self.registry = CollectorRegistry()
        self.sources = ScrapeSources()
        self.max_age = max_age
        self._clock = clock
        self._refreshed_at: float | None = None
        self._refreshing: asyncio.Future[None] | None = None
        r = self.registry
        self.runs_started = Counter("flowdeck_runs_started", "Runs created, by trigger.", ["trigger"], registry=r)
        self.runs_refused = Counter(
            "flowdeck_runs_refused",
            "Starts refused by a run budget, by budget (reason) and trigger.",
            ["reason", "trigger"],
            registry=r,
        )
        self.runs_finished = Counter(
            "flowdeck_runs_finished", "Runs that reached a final status, by status.", ["status"], registry=r
        )
        self.node_seconds = Histogram(
            "flowdeck_node_duration_seconds",
            "Time one node attempt took to run (its handler), by node type and outcome.",
            ["node_type", "outcome"],
            buckets=_NODE_SECONDS_BUCKETS,
            registry=r,
        )
        self.node_retries = Counter("flowdeck_node_retries", "Failed node attempts that will be retried.", registry=r)
        self.sla_breaches = Counter(
            "flowdeck_sla_breaches", "Runs marked past options.slaSeconds (each once, by one process).", registry=r
        )
        self.runs_pruned = Counter(
            "flowdeck_runs_pruned", "Finished runs deleted past their retention (each by one process).", registry=r
        )
        self.queue_due = Gauge("flowdeck_queue_due_jobs", "Jobs due now that no live lease holds.", registry=r)
        self.queue_oldest = Gauge(
            "flowdeck_queue_oldest_due_age_seconds", "How long the oldest due job has waited.", registry=r
        )
        self.sandbox = Gauge("flowdeck_sandbox_processes", "Sandbox processes, busy or idle.", ["state"], registry=r)
        self.connections = Gauge("flowdeck_socketio_connections", "Open Socket.IO connections.", registry=r)
        r.register(_DatabaseCounters(self.sources))
        r.register(_FanoutCounters(self.sources))

    # -- what the engine reports (engine.observer.EngineObserver) ------------------------------------
    def run_started(self, trigger: str) -> None:
        self.runs_started.labels(trigger).inc()

    def node_ran(self, node_type: str, seconds: float, outcome: str) -> None:
        self.node_seconds.labels(node_type, outcome).observe(seconds)

    def run_refused(self, reason: str, trigger: str) -> None:
        self.runs_refused.labels(reason, trigger).inc()

    def observe(self, updates: list[Update]) -> None:
        """A publisher tap: counts the updates this process's engine published (never other processes')."""
        for update in updates:
            if isinstance(update, RunUpdate):
                if update.sla_seconds is not None:
                    self.sla_breaches.inc()
                elif update.status in TERMINAL_RUN_STATUSES:
                    self.runs_finished.labels(update.status.value).inc()
            elif isinstance(update, NodeUpdate) and update.status is NodeStatus.RETRYING:
                self.node_retries.inc()

    # -- the scrape -----------------------------------------------------------------------------------
    async def render(self) -> bytes:
        """The text exposition format, with gauges at most ``max_age`` old."""
        await self._fresh()
        return generate_latest(self.registry)

    async def _fresh(self) -> None:
        if self._refreshed_at is not None and self._clock() - self._refreshed_at < self.max_age:
            return
        if self._refreshing is None:
            self._refreshing = asyncio.ensure_future(self._refresh_once())
        await asyncio.shield(self._refreshing)  # a scraper that hangs up does not cancel the others' read

    async def _refresh_once(self) -> None:
        try:
            await self.refresh()
        except Exception:
            log.warning("could not refresh the metrics gauges (the scrape shows the last values)", exc_info=True)
        finally:
            self._refreshed_at = self._clock()  # a failing database is asked again a second later, not per scrape
            self._refreshing = None

    async def refresh(self) -> None:
        sources = self.sources
        if sources.queue is not None:
            stats = await sources.queue()
            self.queue_due.set(stats.due_jobs)
            self.queue_oldest.set(stats.oldest_due_age)
        if sources.sandbox is not None:
            busy, idle = sources.sandbox()
            self.sandbox.labels("busy").set(busy)
            self.sandbox.labels("idle").set(idle)
        if sources.connections is not None:
            self.connections.set(sources.connections())


def observe_engine(
    metrics: Metrics, engine: Engine, *, sandbox: SandboxPool | None = None, fanout: FanoutTraffic | None = None
) -> None:
    """Count what ``engine`` does in this process, and read the queue (the sandbox, the traffic with the other
    processes) at scrape time."""
    engine.attach_observer(metrics)
    engine.publisher.taps.append(metrics.observe)
    engine.pruner.listeners.append(lambda deleted: metrics.runs_pruned.inc(deleted.total))
    metrics.sources.queue = lambda: read_queue_stats(engine.db, time.time())
    metrics.sources.database = (engine.db.counter, engine.db.is_sqlite)
    metrics.sources.fanout = fanout
    if sandbox is not None:
        metrics.sources.sandbox = lambda: sandbox.usage
