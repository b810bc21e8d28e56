"""The queue's rows of ``flowdeck bench``: fair share between tenants, and how late delays and retries start.

- **Fair share** (issue 11): a quiet tenant's short run timed alone, then again while another tenant
  has 60 busy runs queued (each holds a worker slot for a while). With claims taking tenants in turn
  and the busy tenant capped at half the slots, the quiet run takes about as long as alone; first in,
  first out it would wait for the backlog.
- **Lateness** (issue 14): runs with a delay node and runs whose node fails once and is retried after
  its backoff, all waiting at once; for each, the time from the due time (the ``dueAt`` of the
  delayed node's NODE_DISPATCHED row, the ``nextAttemptAt`` of the NODE_FAILED row) to the NODE_STARTED
  row of what was due. Every due time has its own timer, so this stays within milliseconds.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from itertools import pairwise
from typing import Any

from flowdeck.domain.errors import NodeError
from flowdeck.engine.engine import Engine
from flowdeck.handlers.base import HandlerResult, NodeHandler, NodeHelpers
from flowdeck.storage.records import LogRow

__all__ = ("BusyHandler", "FlakyHandler", "QueueRow", "fair_share", "lateness")


class BusyHandler(NodeHandler):
    """Holds its worker slot for ``config.seconds`` (work that takes time), then completes."""

    type_name = "bench_busy"
    handles = ("default",)

    async def execute(
        self, config: Mapping[str, Any], context: Mapping[str, Any], helpers: NodeHelpers
    ) -> HandlerResult:
        await asyncio.sleep(float(config.get("seconds", 0.2)))
        return HandlerResult(output={"i": 1}, next_handle="default")


class FlakyHandler(NodeHandler):
    """Fails its first attempt (a retry follows after the node's backoff), then completes."""

    type_name = "bench_flaky"
    handles = ("default",)

    async def execute(
        self, config: Mapping[str, Any], context: Mapping[str, Any], helpers: NodeHelpers
    ) -> HandlerResult:
        if helpers.attempt == 1:
            raise NodeError("planned failure (the benchmark's retry)")
        return HandlerResult(output={"i": 1}, next_handle="default")


@dataclass(frozen=True, slots=True)
class QueueRow:
    """A row of the benchmark table in its shape (bench.Result.row's columns)."""

    name: str
    runs: int
    p50: float
    p99: float
    target: str

    def row(self) -> dict[str, Any]:
        return {
            "workload": self.name,
            "runs": self.runs,
            "nodesPerRun": None,
            "runMsP50": round(self.p50, 2),
            "runMsP99": round(self.p99, 2),
            "runsPerSecond": None,
            "msPerNode": None,
            "roundTripsPerNode": None,
            "commitsPerNode": None,
            "target": self.target,
        }


def _flow(title: str, middle: list[dict[str, Any]]) -> dict[str, Any]:
    ids = ["start", *(n["id"] for n in middle), "end"]
    nodes = [{"id": "start", "type": "start", "config": {}}, *middle, {"id": "end", "type": "end", "config": {}}]
    edges = [{"id": f"e{i}", "source": a, "target": b} for i, (a, b) in enumerate(pairwise(ids))]
    return {"title": title, "nodes": nodes, "edges": edges}


def _percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * fraction))] if ordered else 0.0


Finished = Callable[[str], Awaitable[Any]]
"""Waits for a run to end (the benchmark listens to the publisher)."""


async def fair_share(engine: Engine, quiet_tenant: str, finished: Finished, *, quick: bool) -> list[QueueRow]:
    busy_tenant = await engine.tenants.ensure("bench-busy")
    busy = await engine.create_workflow(
        busy_tenant,
        _flow("bench busy", [{"id": f"b{i}", "type": BusyHandler.type_name, "config": {}} for i in range(3)]),
    )
    quiet = await engine.create_workflow(quiet_tenant, _flow("bench quiet", [{"id": "n1", "type": "bench_noop"}]))
    samples = 5 if quick else 20

    async def quiet_run() -> float:
        started = time.perf_counter()
        await finished(await engine.start_workflow_run(quiet_tenant, quiet.id, {}))
        return (time.perf_counter() - started) * 1000

    await quiet_run()  # warm
    alone = [await quiet_run() for _ in range(samples)]
    burst = [await engine.start_workflow_run(busy_tenant, busy.id, {}) for _ in range(60)]
    beside = [await quiet_run() for _ in range(samples)]
    await asyncio.gather(*(finished(i) for i in burst))
    alone_p50 = _percentile(alone, 0.5)
    ratio = _percentile(beside, 0.5) / alone_p50 if alone_p50 else 0.0
    return [
        QueueRow("7 quiet tenant's run, alone", samples, alone_p50, _percentile(alone, 0.99), ""),
        QueueRow(
            "7 ... beside 60 busy runs of another tenant",
            samples,
            _percentile(beside, 0.5),
            _percentile(beside, 0.99),
            f"{ratio:.2f}x alone (about 1x)",
        ),
    ]


async def lateness(engine: Engine, tenant_id: str, finished: Finished, *, quick: bool) -> list[QueueRow]:
    runs = 20 if quick else 100
    jitter = random.Random(7)  # noqa: S311 -- spread of due times, not cryptography
    delayed, retried = [], []
    for _ in range(runs):
        seconds = round(jitter.uniform(0.05, 1.0), 3)
        flow = _flow(
            "bench delay",
            [{"id": "wait", "type": "delay", "config": {"seconds": seconds}}, {"id": "after", "type": "bench_noop"}],
        )
        delayed.append((await engine.create_workflow(tenant_id, flow)).id)
        backoff = round(jitter.uniform(0.05, 1.0), 3)
        flaky = {
            "id": "flaky",
            "type": FlakyHandler.type_name,
            "config": {},
            "retry": {"maxAttempts": 2, "backoffSeconds": backoff},
        }
        retried.append((await engine.create_workflow(tenant_id, _flow("bench retry", [flaky]))).id)
    ids = [await engine.start_workflow_run(tenant_id, w, {}) for w in [*delayed, *retried]]
    await asyncio.gather(*(finished(i) for i in ids))
    late_delays: list[float] = []
    late_retries: list[float] = []
    for instance_id in ids:
        rows = await engine.state.read_log(instance_id)
        late_delays += _late(rows, "NODE_DISPATCHED", "dueAt")
        late_retries += _late(rows, "NODE_FAILED", "nextAttemptAt")
    target = "p99 <= 50 ms"
    return [
        QueueRow("6 delay lateness, ms", len(late_delays), _p(late_delays, 0.5), _p(late_delays, 0.99), target),
        QueueRow("6 retry lateness, ms", len(late_retries), _p(late_retries, 0.5), _p(late_retries, 0.99), target),
    ]


def _p(values: list[float], fraction: float) -> float:
    return _percentile(values, fraction) * 1000


def _late(rows: list[LogRow], event: str, key: str) -> list[float]:
    """Seconds from each due time announced by an ``event`` row to the NODE_STARTED that followed it."""
    found = []
    for row in rows:
        due = (row.payload or {}).get(key) if row.event_type == event else None
        if due is None:
            continue
        attempt = row.node_attempt + (1 if event == "NODE_FAILED" else 0)
        started = next(
            (
                r.created_at
                for r in rows
                if r.event_type == "NODE_STARTED" and r.node_id == row.node_id and r.node_attempt == attempt
            ),
            None,
        )
        if started is not None:
            found.append(max(0.0, started - float(due)))
    return found
