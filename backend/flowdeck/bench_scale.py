"""Scale-out rows of ``flowdeck bench`` (SPEC §11 item 7).

- ``--workers N[,N...]`` (PostgreSQL): the concurrent and fan-out workloads with the work done by N
  ``flowdeck worker`` processes (the bench process's own worker off), N = 0 being the bench process's
  own worker alone, after a warm-up round of the first N whose figures are thrown away. Beside each
  figure, the CPU seconds each party used meanwhile (``/proc/<pid>/stat`` utime + stime): the bench
  process (it starts the runs and hears them end), the worker processes, and PostgreSQL's processes (the
  backends of the benchmark's database plus the server's own background processes; other databases'
  backends are left out). Whichever is near one core per process (or the machine's cores in all) is what
  saturates. Then how often the worker processes were preempted (involuntary context switches): when
  that grows with N, the processes outnumber the cores and each pays its caches again after every switch,
  so the same work costs more CPU. And the work itself, per node, read from the counters of every process's
  ``/metrics`` (each worker process gets a listener of its own): the database round trips of the bench
  process and the workers together, and the messages the workers heard from the other processes
  (``flowdeck_fanout_messages_received_total``). These do not depend on the machine: flat across N, the
  work per node is too, whatever the CPU row says about cores shared by more processes than they fit.
- **The control** (``bench_control.py``): the same N as processes without Flowdeck sharing a fixed amount of
  PostgreSQL round trips and Python, their summed CPU beside one process's: what the machine itself
  charges for N processes on its cores, to read the worker processes' growth against.
- **The drain**: runs of a 5-node chain queued at once while nothing claims, then the workers started
  and the queue drained; total time (from asking the workers to start, and how much of it was their
  start-up), runs/s (from the moment they were ready), every run's end state, and the peak RSS of the
  bench process and of each worker process.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import resource
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import sqlalchemy as sa

from flowdeck.bench import NoopHandler, Result, _Bench, chain, fan, open_bench_runtime, vacuum_hot_tables
from flowdeck.bench_control import control_round
from flowdeck.bench_metrics import free_ports, scrape_totals
from flowdeck.bench_queue import BusyHandler, FlakyHandler
from flowdeck.domain.graph import Graph
from flowdeck.domain.statuses import TERMINAL_RUN_STATUSES, RunStatus
from flowdeck.proc_stats import cpu_seconds, preemptions
from flowdeck.runtime import Runtime
from flowdeck.serving import pool_share
from flowdeck.settings import METRICS_LISTENER_VARIABLES, Settings
from flowdeck.storage.tables import instances
from flowdeck.worker_processes import WorkerProcesses, worker_command

__all__ = (
    "CpuMeter",
    "ScaleRound",
    "database_name",
    "drain",
    "parse_workers",
    "run_scale",
    "scale_bench",
)

_PROC = Path("/proc")


def _peak_rss_mb(pid: int) -> float | None:
    """VmHWM of a running process, MB."""
    with contextlib.suppress(OSError):
        for line in (_PROC / str(pid) / "status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return round(int(line.split()[1]) / 1024, 1)
    return None


def _own_peak_rss_mb() -> float:
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)


def _postgres_processes(database: str) -> dict[int, float]:
    """CPU seconds of the PostgreSQL processes that serve ``database``: its backends (their title names
    the database and a client address) and the server's own processes (checkpointer, WAL writer...)."""
    found = {}
    for entry in _PROC.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if (entry / "comm").read_text().strip() != "postgres":
                continue
            title = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if "(" in title and f" {database} " not in title:
            continue  # another database's backend
        found[int(entry.name)] = cpu_seconds(int(entry.name))
    return found


_WORK_COUNTERS = ("flowdeck_db_round_trips", "flowdeck_fanout_messages_received", "flowdeck_fanout_updates_received")


@dataclass
class CpuMeter:
    """CPU seconds used between :meth:`start` and :meth:`stop` by the bench process, each worker process
    and PostgreSQL (backends that ended meanwhile are missed; those that began count from zero), how
    often the worker processes were preempted meanwhile, and how much the workers' counters grew (those of
    ``_WORK_COUNTERS``, summed over the listeners at ``metrics``; ``None`` if one did not answer)."""

    workers: list[int]
    database: str | None
    metrics: list[str] = field(default_factory=list)
    used: dict[str, Any] = field(default_factory=dict)

    def _sample(self) -> tuple[float, list[float], dict[int, float], int]:
        postgres = _postgres_processes(self.database) if self.database else {}
        preempted = sum(preemptions(p) for p in self.workers)
        return cpu_seconds(os.getpid()), [cpu_seconds(p) for p in self.workers], postgres, preempted

    async def _counters(self) -> dict[str, float] | None:
        return await scrape_totals(self.metrics, _WORK_COUNTERS) if self.metrics else {}

    @contextlib.asynccontextmanager
    async def measure(self) -> AsyncIterator[None]:
        counters = await self._counters()
        bench, workers, postgres, preempted = self._sample()
        started = time.perf_counter()
        yield
        wall = time.perf_counter() - started
        bench2, workers2, postgres2, preempted2 = self._sample()
        counters2 = await self._counters()
        self.used = {
            "wallSeconds": round(wall, 2),
            "bench": round(bench2 - bench, 2),
            "workers": [round(b - a, 2) for a, b in zip(workers, workers2, strict=True)],
            "postgres": round(sum(v - postgres.get(pid, 0.0) for pid, v in postgres2.items()), 2),
            "workersPreempted": preempted2 - preempted,
            "workerCounters": _grown(counters, counters2),
        }


def _grown(before: dict[str, float] | None, after: dict[str, float] | None) -> dict[str, float] | None:
    if before is None or after is None:
        return None
    return {name: value - before.get(name, 0.0) for name, value in after.items()}


@dataclass
class ScaleRound:
    """One N's figures: workload name -> its figure and the CPU it took."""

    workers: int
    rows: dict[str, dict[str, Any]] = field(default_factory=dict)


class _ScaleBench(_Bench):
    """A graph past the node limit of saved workflows (fan-out 1,000) is started as a test run, whose
    definition is stored with it: a worker in another process reads the graph from there (the standard
    table starts it unsaved, known to the bench process only)."""

    _definition: dict[str, Any] | None = None
    meter: CpuMeter | None = None
    """Measures the runs that count (not the warm-up runs before them)."""

    async def measure(self, name: str, nodes: int, runs: int, body: Callable[[Any], Awaitable[list[float]]]) -> Result:
        if self.meter is None:
            return await super().measure(name, nodes, runs, body)
        async with self.meter.measure():
            return await super().measure(name, nodes, runs, body)

    async def sequential(self, definition: dict[str, Any], runs: int, name: str, target: str = "") -> Result:
        self._definition = definition
        return await super().sequential(definition, runs, name, target)

    async def timed_run(self, workflow_id: str | None, graph: Graph | None = None) -> float:
        if graph is None:
            return await super().timed_run(workflow_id)
        started = time.perf_counter()
        instance_id = await self.engine.orchestrator.start_run(
            tenant_id=self.tenant_id, graph=graph, run_input={}, test_definition=self._definition, trigger="test"
        )
        run = await self.finished(instance_id)
        if run.status is not RunStatus.COMPLETED:
            raise RuntimeError(f"benchmark run {instance_id} ended {run.status.value}: {run.error}")
        return (time.perf_counter() - started) * 1000


def _child_env(settings: Settings) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in METRICS_LISTENER_VARIABLES}
    env["FLOWDECK_DATABASE_URL"] = settings.database_url
    # One tenant: every slot of every worker is the benchmark's (as for the bench process's own worker).
    env["FLOWDECK_TENANT_CONCURRENCY"] = str(settings.worker_concurrency)
    return env


@dataclass
class _Fleet:
    children: WorkerProcesses
    metrics: list[str]
    """Each worker process's metrics listener."""


@contextlib.asynccontextmanager
async def _workers(settings: Settings, count: int) -> AsyncIterator[_Fleet]:
    """``count`` worker processes with the benchmark's node types, each with a metrics listener, ready;
    stopped (drained) after."""
    env = _child_env(settings)
    env["FLOWDECK_WORKER_DB_POOL_SIZE"] = str(await pool_share(settings, count))  # within max_connections
    env["FLOWDECK_METRICS"] = "on"  # the listeners below, whatever this shell says
    first_port = free_ports(count) if count else 0
    children = WorkerProcesses(
        count,
        env=env,
        command=worker_command("--bench-nodes"),
        echo=None,
        restart=False,
        env_of=lambda index: {"FLOWDECK_METRICS_ADDR": f"127.0.0.1:{first_port + index}"},
    )
    try:
        children.start()
        await asyncio.to_thread(children.wait_ready, 120)
        yield _Fleet(children, [f"http://127.0.0.1:{first_port + i}/metrics" for i in range(count)])
    finally:
        await asyncio.to_thread(children.stop, settings.shutdown_grace + 10)


def _runtime(settings: Settings, *, with_worker: bool) -> contextlib.AbstractAsyncContextManager[Runtime]:
    return open_bench_runtime(
        replace(settings, tenant_concurrency=settings.worker_concurrency),
        with_worker=with_worker,
        migrate=settings.is_sqlite,
        extra_handlers=[NoopHandler(), BusyHandler(), FlakyHandler()],
        with_scheduler=False,
    )


def database_name(settings: Settings) -> str | None:
    from sqlalchemy.engine import make_url

    return None if settings.is_sqlite else make_url(settings.database_url).database


@contextlib.asynccontextmanager
async def scale_bench(settings: Settings, count: int) -> AsyncIterator[tuple[_ScaleBench, _Fleet]]:
    """The bench process's runtime (its own worker only when ``count`` is 0) and ``count`` worker processes,
    ready, on vacuumed tables; the bench that starts runs and hears them end."""
    async with _runtime(settings, with_worker=count == 0) as runtime, _workers(settings, count) as fleet:
        await vacuum_hot_tables(runtime.db)
        bench = _ScaleBench(runtime.engine, await runtime.engine.tenants.ensure("bench"))
        try:
            yield bench, fleet
        finally:
            await bench.close()


async def _scale_round(settings: Settings, count: int, *, quick: bool, warm_up: bool = False) -> ScaleRound:
    found = ScaleRound(count)
    said = "warm-up, " if warm_up else ""
    async with scale_bench(settings, count) as (bench, fleet):
        meter = bench.meter = CpuMeter(fleet.children.pids, database_name(settings), fleet.metrics)
        concurrent = await bench.concurrent(chain(5), 100, f"3 {said}100 concurrent chains of 5, N={count}", "")
        found.rows["3 100 concurrent chains of 5: runs/s"] = _figure(concurrent, "runsPerSecond", meter)
        for width in (100, 1000):
            runs = 1 if quick and width == 1000 else 3
            fanned = await bench.sequential(fan(width), runs, f"4 {said}fan-out {width}, N={count}")
            found.rows[f"4 fan-out {width}: ms/node"] = _figure(fanned, "msPerNode", meter)
    return found


def _figure(result: Result, key: str, meter: CpuMeter) -> dict[str, Any]:
    return {"value": result.row()[key], "cpu": meter.used, "work": _work(result, meter.used["workerCounters"])}


def _work(result: Result, grown: dict[str, float] | None) -> dict[str, float] | None:
    """Per node: the round trips of the bench process and the workers together, and what the workers heard
    from the other processes (messages, and node and run updates among them)."""
    if grown is None:
        return None
    nodes = result.runs * result.nodes_per_run
    return {
        "roundTripsPerNode": round((result.round_trips + grown.get("flowdeck_db_round_trips_total", 0.0)) / nodes, 2),
        "messagesHeardPerNode": round(grown.get("flowdeck_fanout_messages_received_total", 0.0) / nodes, 3),
        "updatesHeardPerNode": round(grown.get("flowdeck_fanout_updates_received_total", 0.0) / nodes, 3),
    }


async def drain(settings: Settings, count: int, runs: int) -> dict[str, Any]:
    """Queue ``runs`` runs of a 5-node chain while nothing claims, then drain them with ``count`` worker
    processes (0: the bench process's own worker). Every run must end COMPLETED."""
    async with _runtime(settings, with_worker=False) as runtime:
        engine = runtime.engine
        tenant_id = await engine.tenants.ensure("bench-drain")
        workflow = await engine.create_workflow(tenant_id, chain(5))
        for first in range(0, runs, 100):
            batch = range(first, min(runs, first + 100))
            await asyncio.gather(*(engine.start_workflow_run(tenant_id, workflow.id, {"i": i}) for i in batch))
        if not settings.is_sqlite:
            await vacuum_hot_tables(runtime.db)
    started = time.perf_counter()
    async with _runtime(settings, with_worker=count == 0) as runtime, _workers(settings, count) as fleet:
        ready = time.perf_counter()  # the workers claim from (just before) here
        statuses = await _wait_drained(runtime, workflow.id, runs)
        done = time.perf_counter()
        worker_rss = [_peak_rss_mb(pid) for pid in fleet.children.pids]
    completed = statuses.get("COMPLETED", 0)
    return {
        "workers": count,
        "runs": runs,
        "seconds": round(done - started, 2),
        "startupSeconds": round(ready - started, 2),
        "runsPerSecond": round(runs / (done - ready), 1),
        "statuses": statuses,
        "allCompleted": completed == runs,
        "peakRssMb": {"bench": _own_peak_rss_mb(), "workers": worker_rss},
    }


async def _wait_drained(runtime: Runtime, workflow_id: str, runs: int) -> dict[str, int]:
    """Every run's status once none is left queued or running (polled twice a second)."""
    query = (
        sa.select(instances.c.status, sa.func.count())
        .where(instances.c.workflow_id == workflow_id)
        .group_by(instances.c.status)
    )
    while True:
        async with runtime.db.read() as conn:
            statuses: dict[str, int] = dict((await conn.execute(query)).all())
        if sum(n for status, n in statuses.items() if status in TERMINAL_RUN_STATUSES) >= runs:
            return statuses
        await asyncio.sleep(0.5)


def parse_workers(text: str) -> list[int]:
    """``"0,1,2,4"`` -> ``[0, 1, 2, 4]``."""
    try:
        counts = [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise ValueError(f"--workers takes counts separated by commas (0,1,2,4), got {text!r}") from None
    if not counts or min(counts) < 0:
        raise ValueError(f"--workers takes counts of at least 0, got {text!r}")
    return counts


async def run_scale(settings: Settings, counts: list[int], *, quick: bool = False) -> dict[str, Any]:
    """The ``--workers`` table: each workload across each N, then the drain with each N."""
    if settings.is_sqlite:
        raise ValueError(
            "bench --workers needs PostgreSQL (FLOWDECK_DATABASE_URL=postgresql+asyncpg://...): worker "
            "processes on SQLite would queue behind its one writer, and the bench hears them only through PostgreSQL"
        )
    # The first round on a fresh database pays for its cold caches and for tables growing from empty, which
    # the same N later does not: one round is run first and thrown away, so no N is measured cold.
    await _scale_round(settings, counts[0], quick=quick, warm_up=True)
    rounds = [await _scale_round(settings, count, quick=quick) for count in counts]
    units = 10_000 if quick else 20_000
    controls = [await control_round(settings.database_url, max(count, 1), units) for count in counts]
    runs = 1000 if quick else 10_000
    drains = [await drain(settings, count, runs) for count in counts]
    _print_scale(rounds, controls, drains, settings)
    return {
        "workers": counts,
        "workloads": {r.workers: r.rows for r in rounds},
        "control": controls,
        "drain": drains,
    }


def _cpu_cell(cpu: dict[str, Any]) -> str:
    workers = "+".join(f"{s:g}" for s in cpu["workers"]) or "-"
    return f"{cpu['bench']:g} / {workers} / {cpu['postgres']:g} in {cpu['wallSeconds']:g}; {cpu['workersPreempted']}"


def _print_scale(
    rounds: list[ScaleRound], controls: list[dict[str, Any]], drains: list[dict[str, Any]], settings: Settings
) -> None:
    header = ["workload", *(f"N={r.workers}" for r in rounds)]
    lines: list[list[str]] = []
    for name in rounds[0].rows:
        lines.append([name, *(str(r.rows[name]["value"]) for r in rounds)])
        cpu = (_cpu_cell(r.rows[name]["cpu"]) for r in rounds)
        lines.append(["  cpu s: bench / workers / postgres in wall s; workers preempted", *cpu])
        work = (_work_cell(r.rows[name].get("work")) for r in rounds)
        lines.append(["  per node: round trips; messages (updates) the workers heard", *work])
    units = controls[0]["units"]
    lines.append(
        [
            f"control (no Flowdeck): {units} round trips shared: cpu s",
            *(_control_cell(c, controls[0]) for c in controls),
        ]
    )
    lines.append(["  processes; preempted", *(f"{c['processes']}; {c['preempted']}" for c in controls)])
    runs = drains[0]["runs"]
    lines.append([f"7 drain of {runs} queued runs: runs/s", *(str(d["runsPerSecond"]) for d in drains)])
    ended = (f"{d['seconds']:g} ({d['startupSeconds']:g}); {_yes(d)}" for d in drains)
    lines.append(["  seconds (of which start-up); all completed", *ended])
    lines.append(["  peak RSS MB: bench / workers", *(_rss_cell(d) for d in drains)])
    _print_columns(
        f"Scale-out on {settings.database_url.split('://')[0]} (N worker processes; N=0: "
        "the bench process's own worker)",
        header,
        lines,
    )


def _work_cell(work: dict[str, float] | None) -> str:
    if work is None:
        return "-"
    heard = f"{work['messagesHeardPerNode']:g} ({work['updatesHeardPerNode']:g})"
    return f"{work['roundTripsPerNode']:g}; {heard}"


def _control_cell(control: dict[str, Any], first: dict[str, Any]) -> str:
    """Its summed CPU, and that as a multiple of the first N's (the machine's price for the extra processes)."""
    return f"{control['cpuSeconds']:g} ({control['cpuSeconds'] / first['cpuSeconds']:.2f}x)"


def _yes(found: dict[str, Any]) -> str:
    return "yes" if found["allCompleted"] else f"NO {found['statuses']}"


def _rss_cell(found: dict[str, Any]) -> str:
    workers = "+".join(f"{mb:g}" for mb in found["peakRssMb"]["workers"] if mb is not None) or "-"
    return f"{found['peakRssMb']['bench']:g} / {workers}"


def _print_columns(title: str, header: list[str], lines: list[list[str]], out: Callable[[str], None] = print) -> None:
    widths = [max(len(row[i]) for row in [header, *lines]) for i in range(len(header))]
    out(f"\n{title}")
    for row in [header, *lines]:
        out("  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip())
    sys.stdout.flush()
