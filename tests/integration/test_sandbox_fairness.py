"""Fair sandboxes (issue 21, "Sandbox starvation"): one tenant's backlog of CPU-heavy python runs does
not hold a second tenant's trivial python run back. Real engine, real sandbox processes, two tenants,
test runs and scheduled (production) runs, on SQLite and PostgreSQL.

Before the pool served tenants in turn and grew for a tenant held out, the quiet tenant's run waited
behind the busy tenant's queued calls, first come, first served: 8-60 s instead of a fraction of one.
"""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import AsyncIterator, Awaitable, Callable

import pytest

from flowdeck.domain.statuses import RunStatus
from flowdeck.engine.engine import Engine
from flowdeck.handlers.python_code import PythonCodeHandler
from flowdeck.handlers.registry import HandlerRegistry, builtin_handlers
from flowdeck.sandbox.pool import SandboxPool
from flowdeck.storage.database import Database
from tests.support.graphs import definition, edge, end, node

HEAVY_SECONDS = 3
"""Each busy run burns a CPU for this long (finite: a stray one cannot hold a core for the rest of the suite)."""
HEAVY = (
    "import datetime\n"
    f"end = datetime.datetime.now() + datetime.timedelta(seconds={HEAVY_SECONDS})\n"
    "n = 0\n"
    "while datetime.datetime.now() < end:\n"
    "    n += 1\n"
    "return {'n': n}"
)
TRIVIAL = "return {'v': 42}"
BUSY_RUNS = 20
QUIET_RUNS = 20
BOUND_SECONDS = 3.0
"""The target is 1 s at p95; the test allows three, for a loaded machine."""


def _one_python_node(code: str) -> dict:
    return definition(
        [node("start", "start"), node("work", "python", config={"code": code}, timeoutSeconds=300), end()],
        [edge("start", "work"), edge("work", "end", "success")],
    )


@pytest.fixture
async def sandbox() -> AsyncIterator[SandboxPool]:
    async with SandboxPool(2) as pool:  # the defaults of `serve`: a floor of 2, a ceiling of 6
        yield pool


@pytest.fixture
async def engine(db: Database, sandbox: SandboxPool) -> AsyncIterator[Engine]:
    engine = Engine(db, HandlerRegistry([*builtin_handlers(), PythonCodeHandler(sandbox)]), poll_interval=0.05)
    await engine.start()
    yield engine
    await engine.stop()


async def _launcher(engine: Engine, kind: str, tenant_id: str, code: str) -> Callable[[], Awaitable[str]]:
    """Starts one run of a one-python-node workflow: a test run, or a scheduled run of a saved version."""
    graph = _one_python_node(code)
    if kind == "test":
        return lambda: engine.start_test_run(tenant_id, graph)
    workflow = await engine.create_workflow(tenant_id, graph)
    return lambda: engine.start_workflow_run(tenant_id, workflow.id, trigger="schedule")


async def _wait_until(condition: Callable[[], bool], timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out waiting for the busy tenant to fill the sandbox pool"
        await asyncio.sleep(0.02)


def _p95(samples: list[float]) -> float:
    ordered = sorted(samples)
    return ordered[math.ceil(0.95 * len(ordered)) - 1]


@pytest.mark.parametrize("kind", ["test", "scheduled"])
async def test_a_busy_tenants_heavy_runs_do_not_starve_a_quiet_tenants_python_run(
    engine: Engine, sandbox: SandboxPool, kind: str
) -> None:
    busy = await engine.tenants.ensure("busy")
    quiet = await engine.tenants.ensure("quiet")
    start_heavy = await _launcher(engine, kind, busy, HEAVY)
    start_trivial = await _launcher(engine, kind, quiet, TRIVIAL)
    busy_runs = [await start_heavy() for _ in range(BUSY_RUNS)]
    try:
        # The busy tenant holds every process of the floor and has more calls waiting for one.
        await _wait_until(lambda: sandbox.usage[0] >= sandbox.size and sandbox.waiting > 0, 30)
        durations: list[float] = []
        for _ in range(QUIET_RUNS):
            began = time.perf_counter()
            run = await engine.wait_for_run(await start_trivial(), 60)
            durations.append(time.perf_counter() - began)
            assert run.status is RunStatus.COMPLETED
            assert run.output == {}
            if sum(1 for d in durations if d > BOUND_SECONDS) > QUIET_RUNS * 0.05:
                break  # the p95 is already past the bound: no need to wait for more
        still_busy = [await engine.state.get_instance(run_id) for run_id in busy_runs]
        unfinished = sum(1 for r in still_busy if r is not None and r.status in (RunStatus.PENDING, RunStatus.RUNNING))
    finally:
        for run_id in busy_runs:
            await engine.cancel_run(run_id)
    database = "SQLite" if engine.db.is_sqlite else "PostgreSQL"
    print(  # the figures for the report (pytest -s)
        f"\n{database} {kind}: quiet tenant's python run p50 {sorted(durations)[len(durations) // 2]:.3f} s,"
        f" p95 {_p95(durations):.3f} s, max {max(durations):.3f} s over {len(durations)} runs;"
        f" busy runs unfinished at the end: {unfinished} of {BUSY_RUNS}"
    )
    assert _p95(durations) <= BOUND_SECONDS, f"p95 {_p95(durations):.2f} s: {sorted(durations)}"
    assert unfinished >= BUSY_RUNS // 2, "the busy tenant's backlog drained: the measurement proves nothing"
