"""``flowdeck bench``: the standard workloads of SPEC §11 against the configured database.

Engine-only figures use ``bench_noop``, a node type the benchmark registers through the handler
registry: it returns a small dict at once, so what is measured is the engine (scheduling, the log,
the queue). The end-to-end figure uses real ``python`` nodes, sandbox included.
"""

from __future__ import annotations

import asyncio
import json
import statistics
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from itertools import pairwise
from pathlib import Path
from typing import Any

import sqlalchemy as sa

from flowdeck.bench_queue import BusyHandler, FlakyHandler, fair_share, lateness
from flowdeck.domain.graph import Graph
from flowdeck.domain.statuses import TERMINAL_RUN_STATUSES, RunStatus
from flowdeck.engine.engine import Engine
from flowdeck.engine.publisher import RunUpdate
from flowdeck.handlers.base import HandlerResult, NodeHandler, NodeHelpers
from flowdeck.runtime import Runtime, freeze_startup_heap, open_runtime
from flowdeck.sandbox.pool import SandboxPool
from flowdeck.settings import Settings
from flowdeck.storage.database import Database
from flowdeck.validation.limits import MAX_NODES

__all__ = ("NoopHandler", "run_bench")


class NoopHandler(NodeHandler):
    """The benchmark's node: completes at once with a small output."""

    type_name = "bench_noop"
    handles = ("default",)
    confined = True

    async def execute(
        self, config: Mapping[str, Any], context: Mapping[str, Any], helpers: NodeHelpers
    ) -> HandlerResult:
        return HandlerResult(output={"i": 1}, next_handle="default")


NOOP = {"type": NoopHandler.type_name, "config": {}}
PYTHON_NOOP = {"type": "python", "config": {"code": "return {'i': 1}"}}


@dataclass
class Result:
    name: str
    runs: int
    nodes_per_run: int
    seconds: float
    run_ms: list[float] = field(default_factory=list)
    round_trips: int = 0
    commits: int = 0
    target: str = ""
    per_node: bool = True
    """Whether ms per node is the figure (chains, fan-outs) rather than ms per run."""

    def row(self) -> dict[str, Any]:
        ms = sorted(self.run_ms)
        node_count = self.runs * self.nodes_per_run
        median = statistics.median(ms) if ms else None
        return {
            "workload": self.name,
            "runs": self.runs,
            "nodesPerRun": self.nodes_per_run,
            "runMsP50": _round(median),
            "runMsP99": _round(ms[min(len(ms) - 1, int(len(ms) * 0.99))] if ms else None),
            "runsPerSecond": round(self.runs / self.seconds, 1),
            "msPerNode": _round(median / self.nodes_per_run if median is not None else None, 3),
            "roundTripsPerNode": _round(self.round_trips / node_count if self.round_trips else None),
            "commitsPerNode": _round(self.commits / node_count if self.round_trips else None),
            "target": self.target,
        }


def _round(value: float | None, digits: int = 2) -> float | None:
    return None if value is None else round(value, digits)


HOT_TABLES = ("node_jobs", "join_barriers", "instances")
"""The rows the engine updates and deletes all the time (the queue, joins, run statuses)."""


async def vacuum_hot_tables(db: Database) -> None:
    """Clear the hot tables' dead rows before a measured round on PostgreSQL, so that every round starts from
    the same state: without it (autovacuum off, as on the development server) the queue's dead rows pile up
    round after round and each later round pays for the earlier ones."""
    async with db.autocommit() as conn:
        await conn.execute(sa.text(f"VACUUM (ANALYZE) {', '.join(HOT_TABLES)}"))


def chain(length: int, noop: dict[str, Any] = NOOP) -> dict[str, Any]:
    """start -> (length - 2) no-ops -> end: ``length`` nodes in all."""
    middle = [{"id": f"n{i}", **noop} for i in range(1, length - 1)]
    ids = ["start", *(n["id"] for n in middle), "end"]
    nodes = [{"id": "start", "type": "start", "config": {}}, *middle, {"id": "end", "type": "end", "config": {}}]
    edges = [{"id": f"e{i}", "source": a, "target": b} for i, (a, b) in enumerate(pairwise(ids))]
    return {"title": f"bench chain {length}", "nodes": nodes, "edges": edges}


def loop(items: int) -> dict[str, Any]:
    """start -> loop over ``items`` numbers with a one-node body -> end."""
    nodes = [
        {"id": "start", "type": "start", "config": {}},
        {"id": "each", "type": "loop", "config": {"items": f"{{{{ range({items}) | list }}}}", "maxItems": items}},
        {"id": "body", **NOOP},
        {"id": "end", "type": "end", "config": {}},
    ]
    edges = [
        {"id": "e1", "source": "start", "target": "each"},
        {"id": "e2", "source": "each", "target": "body", "sourceHandle": "loop"},
        {"id": "e3", "source": "each", "target": "end", "sourceHandle": "done"},
    ]
    return {"title": f"bench loop {items}", "nodes": nodes, "edges": edges}


def caller(child_id: str) -> dict[str, Any]:
    """start -> a ``workflow`` node calling ``child_id`` -> end."""
    nodes = [
        {"id": "start", "type": "start", "config": {}},
        {"id": "call", "type": "workflow", "config": {"workflowId": child_id, "input": {}}},
        {"id": "end", "type": "end", "config": {}},
    ]
    edges = [
        {"id": "e1", "source": "start", "target": "call"},
        {"id": "e2", "source": "call", "target": "end", "sourceHandle": "success"},
    ]
    return {"title": "bench caller", "nodes": nodes, "edges": edges}


def fan(width: int) -> dict[str, Any]:
    """start -> ``width`` parallel no-ops -> join (all) -> end."""
    branches = [{"id": f"b{i}", **NOOP} for i in range(width)]
    nodes = [
        {"id": "start", "type": "start", "config": {}},
        *branches,
        {"id": "join", **NOOP},
        {"id": "end", "type": "end", "config": {}},
    ]
    edges = [{"id": f"s{b['id']}", "source": "start", "target": b["id"]} for b in branches]
    edges += [{"id": f"j{b['id']}", "source": b["id"], "target": "join"} for b in branches]
    edges.append({"id": "je", "source": "join", "target": "end"})
    return {"title": f"bench fan {width}", "nodes": nodes, "edges": edges}


class _Progress:
    def __init__(self, label: str, total: int) -> None:
        self.label, self.total, self.done = label, total, 0

    def step(self) -> None:
        self.done += 1
        if sys.stderr.isatty() or self.done == self.total:
            filled = int(30 * self.done / self.total)
            print(
                f"\r{self.label:28} [{'#' * filled}{'.' * (30 - filled)}] {self.done}/{self.total}",
                end="\n" if self.done == self.total else "",
                file=sys.stderr,
                flush=True,
            )


WARM_ROUNDS = 2
"""Unmeasured rounds before a concurrent workload, so that every pooled connection it uses is warm:
PostgreSQL prepares statements per connection and plans each afresh at its first five executions before
keeping a generic plan; in one cold round of 100 runs planning was 40 % of PostgreSQL's CPU
(docs/benchmarks.md), a start-up cost a server that has run for a minute no longer pays."""


class _Bench:
    """The engine under test, the benchmark's tenant, and how the benchmark learns that runs finished:
    from the publisher, as a live client does (reading the run back would add the client's reads to
    the engine's figures)."""

    def __init__(self, engine: Engine, tenant_id: str) -> None:
        self.engine = engine
        self.tenant_id = tenant_id
        self._waiting: dict[str, asyncio.Future[RunUpdate]] = {}
        self._finished: dict[str, RunUpdate] = {}
        self._updates = engine.publisher.subscribe(runs_only=True)
        self._listener = asyncio.create_task(self._listen())

    async def _listen(self) -> None:
        while True:
            update = await self._updates.get()
            if not isinstance(update, RunUpdate) or update.status not in TERMINAL_RUN_STATUSES:
                continue
            waiting = self._waiting.pop(update.instance_id, None)
            if waiting is None:
                self._finished[update.instance_id] = update
            elif not waiting.done():
                waiting.set_result(update)

    async def finished(self, instance_id: str) -> RunUpdate:
        known = self._finished.pop(instance_id, None)
        if known is not None:
            return known
        waiting = self._waiting[instance_id] = asyncio.get_running_loop().create_future()
        return await asyncio.wait_for(waiting, 120)

    async def close(self) -> None:
        self._listener.cancel()
        self._updates.close()

    async def timed_run(self, workflow_id: str | None, graph: Graph | None = None) -> float:
        started = time.perf_counter()
        if graph is not None:
            # Past the 500-node limit of user definitions (fan-out 1,000): straight to the orchestrator.
            instance_id = await self.engine.orchestrator.start_run(tenant_id=self.tenant_id, graph=graph, run_input={})
        else:
            assert workflow_id is not None
            instance_id = await self.engine.start_workflow_run(self.tenant_id, workflow_id, {})
        run = await self.finished(instance_id)
        if run.status is not RunStatus.COMPLETED:
            raise RuntimeError(f"benchmark run {instance_id} ended {run.status.value}: {run.error}")
        return (time.perf_counter() - started) * 1000

    async def measure(
        self, name: str, nodes: int, runs: int, body: Callable[[_Progress], Awaitable[list[float]]]
    ) -> Result:
        counter = self.engine.db.counter
        counter.reset()
        started = time.perf_counter()
        run_ms = await body(_Progress(name, runs))
        return Result(name, runs, nodes, time.perf_counter() - started, run_ms, counter.round_trips, counter.commits)

    async def sequential(self, definition: dict[str, Any], runs: int, name: str, target: str = "") -> Result:
        engine = self.engine
        if len(definition["nodes"]) > MAX_NODES:
            workflow_id, graph = None, engine.plans.build_graph(definition)
        else:
            workflow_id, graph = (await engine.create_workflow(self.tenant_id, definition)).id, None
        await self.timed_run(workflow_id, graph)  # warm the caches

        async def body(progress: _Progress) -> list[float]:
            timings = []
            for _ in range(runs):
                timings.append(await self.timed_run(workflow_id, graph))
                progress.step()
            return timings

        result = await self.measure(name, len(definition["nodes"]), runs, body)
        result.target = target
        return result

    async def concurrent(
        self, definition: dict[str, Any], runs: int, name: str, target: str, *, warm_rounds: int = WARM_ROUNDS
    ) -> Result:
        workflow = await self.engine.create_workflow(self.tenant_id, definition)
        for _ in range(warm_rounds):
            await asyncio.gather(*(self.timed_run(workflow.id) for _ in range(runs)))

        async def body(progress: _Progress) -> list[float]:
            async def one() -> float:
                ms = await self.timed_run(workflow.id)
                progress.step()
                return ms

            return list(await asyncio.gather(*(one() for _ in range(runs))))

        result = await self.measure(name, len(definition["nodes"]), runs, body)
        result.target, result.per_node = target, False
        return result


# The targets we hold ourselves to on a 2-core machine (docs/benchmarks.md): (SQLite, PostgreSQL).
_TARGETS = {
    "chain": ("<= 1 ms/node", "<= 1.5 ms/node"),
    "python": ("<= 2 ms/node", "<= 2.5 ms/node"),
    "diamond": ("<= 20 ms/run", "<= 25 ms/run"),
    "concurrent": (">= 200 runs/s", ">= 150 runs/s"),
    "sandbox": ("p50 <= 1, p99 <= 5 ms", "p50 <= 1, p99 <= 5 ms"),
}


@asynccontextmanager
async def open_bench_runtime(settings: Settings, **options: Any) -> AsyncIterator[Runtime]:
    """``open_runtime`` with the start-up heap frozen, as ``serve`` and ``worker`` freeze theirs: without it a
    full garbage collection scans every module and compiled statement (74 ms in a bench process, 0.5-3.5 ms
    frozen) and lands on whatever the event loop was doing, a measured node or a pruner's batch."""
    async with open_runtime(settings, **options) as runtime:
        freeze_startup_heap()
        yield runtime


async def run_bench(
    settings: Settings, *, quick: bool = False, json_path: str | None = None, workers: list[int] | None = None
) -> int:
    if workers is not None:  # the scale-out table instead (bench_scale.py)
        from flowdeck.bench_scale import run_scale

        return await _write_json(json_path, settings, await run_scale(settings, workers, quick=quick))
    scale = 10 if quick else 1
    target = {name: pair[0 if settings.is_sqlite else 1] for name, pair in _TARGETS.items()}
    async with open_bench_runtime(
        settings,
        migrate=settings.is_sqlite,
        extra_handlers=[NoopHandler(), BusyHandler(), FlakyHandler()],
        with_scheduler=False,
    ) as runtime:
        bench = _Bench(runtime.engine, await runtime.engine.tenants.ensure("bench"))
        worker = runtime.engine.worker
        configured_cap = worker.tenant_concurrency
        # Workloads 1-6 have one tenant: the per-tenant cap (a share between tenants) would only
        # measure how many slots it leaves idle, so they run with every slot; row 7 uses the cap.
        worker.tenant_concurrency = worker.concurrency
        try:
            results = [
                await bench.sequential(chain(20), 200 // scale, "1 chain of 20", target["chain"]),
                await bench.sequential(chain(20, PYTHON_NOOP), 200 // scale, "1 chain of 20 python", target["python"]),
                await bench.sequential(fan(10), 200 // scale, "2 diamond 1-10-1", target["diamond"]),
                await bench.concurrent(chain(5), 100, "3 100 concurrent chains of 5", target["concurrent"]),
            ]
            fans = [
                await bench.sequential(fan(width), 1 if quick and width == 1000 else 3, f"4 fan-out {width}")
                for width in (10, 100, 1000)
            ]
            fans[-1].target = f"{_ratio(fans[-1], fans[0])}x fan-out 10 (<= 1.5x)"
            results += fans
            results.append(await _sandbox_calls(runtime.sandbox, 1000 // scale, target["sandbox"]))
            looped = await bench.sequential(loop(1000 // scale), 3, f"6 loop of {1000 // scale}")
            looped.nodes_per_run = 1000 // scale  # per iteration
            results.append(looped)
            results += await _sub_workflow_call(bench, 200 // scale)
            queue_rows = await lateness(runtime.engine, bench.tenant_id, bench.finished, quick=quick)
            worker.tenant_concurrency = configured_cap
            queue_rows += await fair_share(runtime.engine, bench.tenant_id, bench.finished, quick=quick)
        finally:
            await bench.close()
    rows = [r.row() for r in results] + [q.row() for q in queue_rows]
    rows.append(await _drain_row(settings, 1000 if quick else 10_000))
    _print_table(rows, settings.database_url)
    return await _write_json(json_path, settings, {"results": rows})


async def _drain_row(settings: Settings, runs: int) -> dict[str, Any]:
    """Workload 7's drain with the bench process's own worker (``--workers`` adds worker processes)."""
    from flowdeck.bench_scale import drain

    found = await drain(settings, 0, runs)
    ended = "all COMPLETED" if found["allCompleted"] else f"NOT all COMPLETED: {found['statuses']}"
    return {
        "workload": f"7 drain of {runs} queued chains of 5",
        "runs": runs,
        "nodesPerRun": 5,
        "runMsP50": None,
        "runMsP99": None,
        "runsPerSecond": found["runsPerSecond"],
        "msPerNode": None,
        "roundTripsPerNode": None,
        "commitsPerNode": None,
        "target": f"{ended} in {found['seconds']:g} s (start-up {found['startupSeconds']:g} s), "
        f"peak RSS {found['peakRssMb']['bench']:g} MB",
    }


async def _write_json(json_path: str | None, settings: Settings, found: dict[str, Any]) -> int:
    if json_path:
        report = json.dumps({"database": settings.database_url.split("://")[0], **found}, indent=2)
        await asyncio.to_thread(Path(json_path).write_text, report)
        print(f"wrote {json_path}")
    return 0


async def _sub_workflow_call(bench: _Bench, runs: int) -> list[Result]:
    """A child of 5 nodes run alone, then called by a ``workflow`` node: the call's cost is the difference."""
    child = await bench.engine.create_workflow(bench.tenant_id, chain(5))
    alone = await bench.sequential(chain(5), runs, "8 child of 5 alone")
    called = await bench.sequential(caller(child.id), runs, "8 parent calling it")
    called.per_node = alone.per_node = False
    overhead = statistics.median(called.run_ms) - statistics.median(alone.run_ms)
    called.target = f"{overhead:.2f} ms per call above the child's own"
    return [alone, called]


def _ratio(wide: Result, narrow: Result) -> float:
    per_node = [statistics.median(r.run_ms) / r.nodes_per_run for r in (wide, narrow)]
    return round(per_node[0] / per_node[1], 2)


async def _sandbox_calls(sandbox: SandboxPool, calls: int, target: str) -> Result:
    """Workload 5: warm calls of a small python node straight through the sandbox pool."""
    code, ctx = "return {'sum': ctx['a'] + ctx['b']}", {"a": 1, "b": 2}
    for _ in range(20):
        await sandbox.run(code, ctx, timeout_seconds=5)
    progress, timings = _Progress("5 sandbox calls", calls), []
    started = time.perf_counter()
    for _ in range(calls):
        t = time.perf_counter()
        await sandbox.run(code, ctx, timeout_seconds=5)
        timings.append((time.perf_counter() - t) * 1000)
        progress.step()
    return Result("5 sandbox calls", calls, 1, time.perf_counter() - started, timings, target=target)


def _print_table(rows: list[dict[str, Any]], url: str) -> None:
    print(f"\nFlowdeck benchmark on {url.split('://')[0]}")
    columns = list(rows[0])
    widths = [max(len(c), *(len(str(r[c])) for r in rows)) for c in columns]
    print("  ".join(c.ljust(w) for c, w in zip(columns, widths, strict=True)))
    for r in rows:
        print("  ".join(("-" if r[c] is None else str(r[c])).ljust(w) for c, w in zip(columns, widths, strict=True)))
