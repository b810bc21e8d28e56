"""``flowdeck bench --history``: the run history at N runs in one tenant (default 1,000,000).

Builds the runs once (bench_history_build.py: ~20 real runs, then SQL copies; a later call with the
same database tops the tenant up to N and reuses what is there), then times each query the run
history page makes, through the service ``GET /api/runs`` and ``GET /api/runs/{id}`` call (HTTP and
JSON encoding excluded): p50 and p95 of ``REPEAT`` calls after a warm-up. Then the bytes each run
takes, per table and index. Targets (issue 22): p95 <= 50 ms on PostgreSQL, <= 100 ms on SQLite.
"""

from __future__ import annotations

import json
import statistics
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, Final

import sqlalchemy as sa

from flowdeck.api.pagination import DEFAULT_LIMIT
from flowdeck.api.services.definition_checks import SaveChecks
from flowdeck.api.services.runs import RunService
from flowdeck.bench import NoopHandler, open_bench_runtime
from flowdeck.bench_history_build import COPY_MARK, SPACING, analyze, bytes_per_run, copy_runs, real_runs
from flowdeck.domain.statuses import RunStatus
from flowdeck.settings import Settings
from flowdeck.storage.run_queries import RunFilter, RunQueries
from flowdeck.storage.tables import instances, run_labels

__all__ = ("run_history_bench",)

TENANT: Final = "bench-history"
REPEAT: Final = 40


async def run_history_bench(settings: Settings, runs: int = 1_000_000, json_path: str | None = None) -> int:
    async with open_bench_runtime(settings, migrate=True, extra_handlers=[NoopHandler()], with_scheduler=False) as rt:
        engine = rt.engine
        tenant_id = await engine.tenants.ensure(TENANT)
        have = await _count(rt.db, tenant_id)
        if have < runs:
            templates = await real_runs(engine, tenant_id)
            copies = runs - have - len(templates.ids)
            started = time.perf_counter()
            # Copies are numbered on from what an earlier call made, and are older than everything there.
            first = await _copied(rt.db, tenant_id)
            await copy_runs(rt.db, templates, first, copies, time.time() - (first + copies + 1) * SPACING)
            sys.stderr.write(f"built {copies:,} copies in {time.perf_counter() - started:.0f} s\n")
            await analyze(rt.db)
        assert rt.notifier is not None  # open_runtime always makes one (open_bench_runtime opens it)
        service = RunService(engine, RunQueries(rt.db, engine.state), SaveChecks(engine, rt.notifier))
        rows = [await _time(name, call) for name, call in (await _queries(rt.db, service, tenant_id)).items()]
        sizes = await bytes_per_run(rt.db)
        total = await _count(rt.db, tenant_id)
    sys.stdout.write(_table(rows, sizes, settings.database_url, total))
    if json_path:
        with Path(json_path).open("w") as out:  # noqa: ASYNC230 - once, after everything is measured
            json.dump({"runs": total, "queries": rows, "bytes": sizes}, out, indent=2)
    return 0


async def _count(db: Any, tenant_id: str) -> int:
    async with db.read() as conn:
        stmt = sa.select(sa.func.count()).select_from(instances).where(instances.c.tenant_id == tenant_id)
        return int((await conn.execute(stmt)).scalar_one())


async def _copied(db: Any, tenant_id: str) -> int:
    """How many copies earlier calls made (their ids end in their number: the last 12 hex digits)."""
    async with db.read() as conn:
        stmt = sa.select(sa.func.max(instances.c.id)).where(
            instances.c.tenant_id == tenant_id, instances.c.id.like(f"%-{COPY_MARK}-%")
        )
        highest = (await conn.execute(stmt)).scalar_one()
    return 0 if highest is None else int(str(highest)[-12:], 16) + 1


async def _queries(db: Any, service: RunService, tenant_id: str) -> dict[str, Callable[[], Awaitable[object]]]:
    """The calls to time, with arguments picked from the data (a mid-history day, a caller, a customer)."""
    async with db.read() as conn:
        oldest, newest = (
            await conn.execute(
                sa.select(sa.func.min(instances.c.created_at), sa.func.max(instances.c.created_at)).where(
                    instances.c.tenant_id == tenant_id
                )
            )
        ).one()
        caller = (
            await conn.execute(
                sa.select(instances.c.parent_instance_id)
                .where(instances.c.tenant_id == tenant_id, instances.c.parent_instance_id.is_not(None))
                .order_by(instances.c.created_at)
                .limit(1)
            )
        ).scalar_one()
        workflow = (
            await conn.execute(
                sa.select(instances.c.workflow_id)
                .where(instances.c.tenant_id == tenant_id, instances.c.trigger == "api")
                .order_by(instances.c.created_at.desc()).limit(1)
            )
        ).scalar_one()  # fmt: skip
        customer = (
            await conn.execute(
                sa.select(run_labels.c.value)
                .where(run_labels.c.tenant_id == tenant_id, run_labels.c.name == "customer")
                .order_by(run_labels.c.created_at).limit(1)
            )
        ).scalar_one()  # fmt: skip
    middle = (oldest + newest) / 2
    day = RunFilter(created_from=middle, created_to=middle + 86_400)
    first = await service.list(tenant_id, RunFilter(), None, DEFAULT_LIMIT)
    some_run = first.items[len(first.items) // 2].instance_id
    old_run = (await service.list(tenant_id, RunFilter(created_to=middle), None, 1)).items[0].instance_id
    cursor = None
    for _ in range(99):  # the 100th page's cursor, as a user paging on would hold it
        cursor = (await service.list(tenant_id, RunFilter(), cursor, DEFAULT_LIMIT)).next_cursor
    acme = ("customer", customer)
    filters: dict[str, RunFilter] = {
        "first page": RunFilter(),
        "status FAILED": RunFilter(status=RunStatus.FAILED),
        "status COMPLETED": RunFilter(status=RunStatus.COMPLETED),
        "workflowId": RunFilter(workflow_id=workflow),
        "trigger webhook": RunFilter(trigger="webhook"),
        "isTest true": RunFilter(is_test=True),
        "isTest false": RunFilter(is_test=False),
        "from/to (a day)": day,
        "idPrefix (4 chars)": RunFilter(id_prefix=old_run[:4]),
        "idPrefix (8 chars)": RunFilter(id_prefix=old_run[:8]),
        "caller": RunFilter(parent_instance_id=caller),
        f"label customer={customer}": RunFilter(labels=(acme,)),
        "label region=eu": RunFilter(labels=(("region", "eu"),)),
        "two labels": RunFilter(labels=(acme, ("region", "eu"))),
        "label + status FAILED": RunFilter(labels=(acme,), status=RunStatus.FAILED),
        "workflowId + status FAILED": RunFilter(workflow_id=workflow, status=RunStatus.FAILED),
        "status FAILED + trigger api": RunFilter(status=RunStatus.FAILED, trigger="api"),
        "status + from/to": RunFilter(
            status=RunStatus.COMPLETED, created_from=day.created_from, created_to=day.created_to
        ),
        "isTest + workflowId": RunFilter(is_test=True, workflow_id=workflow),
    }  # fmt: skip

    def listing(f: RunFilter, page: str | None = None) -> Callable[[], Awaitable[object]]:
        return lambda: service.list(tenant_id, f, page, DEFAULT_LIMIT)

    calls = {name: listing(f) for name, f in filters.items()}

    def counting(f: RunFilter) -> Callable[[], Awaitable[object]]:
        return lambda: service.count(tenant_id, f)  # the Runs page asks beside the list

    for name in ("first page", "status FAILED", "workflowId + status FAILED", f"label customer={customer}", "caller"):
        calls[f"count: {name}"] = counting(filters[name])
    calls["100th page (cursor)"] = listing(RunFilter(), cursor)
    calls["run detail (new run)"] = lambda: service.detail(tenant_id, some_run)
    calls["run detail (old run)"] = lambda: service.detail(tenant_id, old_run)
    return calls


async def _time(name: str, call: Callable[[], Awaitable[object]]) -> dict[str, Any]:
    for _ in range(3):
        await call()
    timings = []
    for _ in range(REPEAT):
        started = time.perf_counter()
        await call()
        timings.append((time.perf_counter() - started) * 1000)
    timings.sort()
    p95 = timings[min(len(timings) - 1, round(0.95 * len(timings)) - 1)]
    return {"query": name, "p50Ms": round(statistics.median(timings), 2), "p95Ms": round(p95, 2)}


def _table(rows: list[dict[str, Any]], sizes: list[dict[str, Any]], url: str, runs: int) -> str:
    lines = [f"run history, {runs:,} runs in one tenant, {url.split('://')[0]}"]
    lines.append(f"{'query':34} {'p50 ms':>8} {'p95 ms':>8}")
    lines += [f"{row['query']:34} {row['p50Ms']:>8.2f} {row['p95Ms']:>8.2f}" for row in rows]
    lines.append(f"\n{'table':15} {'part':56} {'bytes/run':>10}")
    lines += [f"{size['table']:15} {size['part']:56} {size['bytesPerRun']:>10,}" for size in sizes]
    lines.append(f"{'':15} {'total':56} {sum(s['bytesPerRun'] for s in sizes):>10,}")
    return "\n".join(lines) + "\n"
