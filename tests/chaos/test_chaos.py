"""The chaos suite (issue 25): real ``flowdeck serve`` and ``flowdeck worker`` processes run a mixed workload
while faults hit them at random; afterwards every invariant is checked over the whole system.

PostgreSQL: ``serve`` and three workers on a cluster of the suite's own (so it may be restarted), faults:
SIGKILL of a worker or of serve, a worker frozen past its lease and woken (a zombie), ``pg_terminate_backend``
of Flowdeck's connections, a PostgreSQL restart or crash (an immediate stop). SQLite: ``serve`` alone, and
``serve --workers 2`` (three processes sharing the file's write lock, their updates over serve's pipes),
killed with SIGKILL (its process group: the workers with it) and started again, or frozen past the leases.

``FLOWDECK_CHAOS_SECONDS`` sets how long faults go on (default: a short run for ``make test``); ``make chaos
MINUTES=30`` soaks. The fault counts and results are printed at the end (``-s`` shows them).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import random
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from flowdeck.storage.database import Database
from tests.chaos import invariants, workload
from tests.chaos.clients import Api, Watcher
from tests.chaos.driver import Workload
from tests.chaos.faults import Faults
from tests.chaos.partner import Partner
from tests.support.flowdeck_processes import FlowdeckProcess, free_port, provision
from tests.support.postgres_cluster import Cluster, own_cluster

LEASE_SECONDS = 3.0
FINISH_BOUND = 180.0
"""Seconds every run has to reach a terminal state once the faults stop (delays, retries, takeovers)."""
SECONDS = float(os.environ.get("FLOWDECK_CHAOS_SECONDS", "0"))
SEED = int(os.environ.get("FLOWDECK_CHAOS_SEED", str(random.SystemRandom().randrange(1_000_000))))

pytestmark = [pytest.mark.slow, pytest.mark.timeout(int(SECONDS) + 480)]


@dataclass
class System:
    url: str
    database_url: str
    serve: FlowdeckProcess
    workers: list[FlowdeckProcess]
    token: str
    cluster: Cluster | None = None
    serve_workers: int = 0
    processes: list[FlowdeckProcess] = field(default_factory=list)


def _environment(database_url: str, port: int) -> dict[str, str]:
    return {
        **os.environ,
        "FLOWDECK_DATABASE_URL": database_url,
        "FLOWDECK_PORT": str(port),
        "FLOWDECK_HOST": "127.0.0.1",
        "FLOWDECK_SECRET_KEY": "chaos-secret-key-not-for-production",
        "FLOWDECK_LEASE_SECONDS": str(LEASE_SECONDS),
        "FLOWDECK_SANDBOX_WORKERS": "1",
        "FLOWDECK_WORKER_CONCURRENCY": "8",
        "FLOWDECK_SERVE_WORKERS": "0",  # the three workers are started (and killed) by the suite itself
        "FLOWDECK_METRICS": "off",
        "FLOWDECK_LOG_FORMAT": "json",  # timed lines: a failure's log lines up with its runs' log rows
        "FLOWDECK_HTTP_ALLOW": "127.0.0.1",  # the partner service the http nodes call
    }


@pytest.fixture
def postgres_system(tmp_path: Path) -> Iterator[System]:
    with own_cluster() as cluster:
        yield from _system(tmp_path, cluster.url, workers=3, cluster=cluster)


@pytest.fixture
def sqlite_system(tmp_path: Path) -> Iterator[System]:
    yield from _system(tmp_path, f"sqlite+aiosqlite:///{tmp_path / 'flowdeck.db'}", workers=0)


@pytest.fixture
def sqlite_processes_system(tmp_path: Path) -> Iterator[System]:
    """``serve --workers 2`` on SQLite: decisions of three processes through one write lock."""
    database_url = f"sqlite+aiosqlite:///{tmp_path / 'flowdeck.db'}"
    yield from _system(tmp_path, database_url, workers=0, serve_workers=2)


def _system(
    tmp_path: Path, database_url: str, workers: int, cluster: Cluster | None = None, serve_workers: int = 0
) -> Iterator[System]:
    port = free_port()
    env = {**_environment(database_url, port), "FLOWDECK_SERVE_WORKERS": str(serve_workers)}
    token = provision(env, "chaos@acme.test", "acme")
    url = f"http://127.0.0.1:{port}"
    serve = FlowdeckProcess("serve", ["serve"], env, tmp_path / "serve.log", health_url=f"{url}/api/health")
    worker_processes = [
        FlowdeckProcess(f"worker{i}", ["worker"], env, tmp_path / f"worker{i}.log") for i in range(1, workers + 1)
    ]
    system = System(url, database_url, serve, worker_processes, token, cluster, serve_workers)
    try:
        for process in [serve, *worker_processes]:
            process.start()
            system.processes.append(process)
        for process in system.processes:
            process.wait_ready()
        yield system
    finally:
        for process in system.processes:  # always, whatever failed: no process outlives the suite
            process.stop()


@pytest.fixture
async def api(request: pytest.FixtureRequest) -> AsyncIterator[tuple[System, Api]]:
    system: System = request.getfixturevalue(request.param)
    client = Api(system.url, system.token)
    yield system, client
    await client.close()


async def _until_finished(db: Database, bound: float) -> list[Any]:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + bound
    while True:
        runs = await invariants.all_runs(db)
        if not invariants.unfinished(runs) or loop.time() > deadline:
            return runs
        await asyncio.sleep(0.5)


@dataclass(frozen=True)
class Plan:
    seconds: float
    fault_gap: tuple[float, float]
    """Seconds between two faults (uniformly drawn)."""
    start_gap: float
    """Seconds between two runs started."""


async def _chaos(system: System, api: Api, plan: Plan) -> None:
    rng = random.Random(SEED)
    async with contextlib.AsyncExitStack() as stack:
        partner = await stack.enter_async_context(Partner().serving())
        watcher = Watcher(system.url, system.token)
        await watcher.connect()
        stack.push_async_callback(watcher.close)
        db = Database(system.database_url)
        stack.push_async_callback(db.dispose)
        driver = Workload(api, watcher, rng, partner)
        degrees = await driver.create()
        stop_answering = asyncio.Event()
        answerer = asyncio.create_task(driver.answer_webhooks(stop_answering))
        stack.callback(answerer.cancel)
        stack.callback(stop_answering.set)

        # Every workflow with every input, without faults: what each run under faults must come to.
        twins = [await driver.start(name, i) for name in sorted(driver.ids) for i in workload.INPUTS]
        runs = await _until_finished(db, FINISH_BOUND)
        twin_runs = [r for r in runs if r["id"] in twins]
        assert [r["status"] for r in twin_runs] == ["COMPLETED"] * len(twins), invariants.not_completed(twin_runs)
        baseline = {invariants.input_key(r["workflow_id"], r["input"]): r["output"] for r in runs}

        faults = Faults(system.serve, system.workers, LEASE_SECONDS, system.cluster, rng)
        stop = asyncio.Event()
        load = [
            asyncio.create_task(driver.start_randomly(stop, plan.start_gap)),
            asyncio.create_task(driver.read_along(stop)),
        ]
        try:
            await faults.run(plan.seconds, plan.fault_gap)
        finally:
            stop.set()
            await faults.settle()
            await asyncio.gather(*load)
        runs = await _until_finished(db, FINISH_BOUND)
        stop_answering.set()
        await answerer
        await watcher.settled()
        await asyncio.sleep(1.0)  # the last updates of runs that just ended reach the browser
        watched = {run_id: await api.eventually("GET", f"/api/runs/{run_id}") for run_id in list(watcher.messages)}
        counted = await invariants.counted_completions(db)
        violations = {
            "runs not terminal within the bound": invariants.unfinished(runs),
            "runs that did not complete": invariants.not_completed(runs),
            "node attempts completed twice": await invariants.completed_twice(db),
            "outputs unlike the run without faults": invariants.outputs_differ(runs, baseline),
            "outputs not from the completion that counts": invariants.tickets_disagree(
                runs, counted, driver.ids["diamond"]
            ),
            "jobs, leases, barriers, loops or waits left": await invariants.leftovers(db, runs, degrees),
            "browser events unlike the log": invariants.browser_disagrees(watcher.messages, watched, counted),
            "5xx answers": api.server_errors,
        }
        http_nodes = await invariants.completions_of(db, "d")
        _report(system, plan, faults, api, driver, runs, watcher, violations)
        for run_id in invariants.runs_named([p for found in violations.values() for p in found])[:3]:
            print(f"  the log of run {run_id}:")
            for line in await invariants.history(db, run_id):
                print(f"    {line}")
        print(
            f"  late results (a zombie's, recorded after its node was taken over, used nowhere): "
            f"{await invariants.late_results(db)}"
        )
        print(
            f"  partner: {partner.calls} calls for {http_nodes} http nodes completed "
            "(a worker lost mid-request makes the call again)"
        )
    assert not any(violations.values()), {k: v[:10] for k, v in violations.items() if v}


def _report(
    system: System,
    plan: Plan,
    faults: Faults,
    api: Api,
    load: Workload,
    runs: list[Any],
    watcher: Watcher,
    violations: dict[str, list[str]],
) -> None:
    backend = "PostgreSQL" if system.cluster else "SQLite"
    if system.serve_workers:
        backend += f", serve --workers {system.serve_workers}"
    statuses = invariants.count_by([r["status"] for r in runs])
    print(f"\nchaos on {backend}: {plan.seconds:.0f} s of faults, seed {SEED}")
    print("  faults: " + (", ".join(f"{name} {n}" for name, n in sorted(faults.counts.items())) or "none"))
    print(
        f"  runs: {len(runs)} ({dict(statuses)}), {len(load.started)} started with an answer, "
        f"{load.unanswered_starts} start requests unanswered, {load.resumed} webhook resumes"
    )
    print(f"  API answers: {dict(sorted(api.statuses.items()))}, {api.unreachable} calls while serve was down")
    print(
        f"  browser: {len(watcher.messages)} runs followed, {sum(map(len, watcher.messages.values()))} messages, "
        f"{watcher.connects} connections"
    )
    for name, found in violations.items():
        print(f"  {name}: {len(found)}")
        for example in found[:3]:
            print(f"    {example}")


PLANS = {
    "postgres_system": Plan(SECONDS or 20.0, fault_gap=(1.0, 3.0), start_gap=0.3),
    "sqlite_system": Plan(SECONDS or 12.0, fault_gap=(4.0, 7.0), start_gap=0.3),
    "sqlite_processes_system": Plan(SECONDS or 12.0, fault_gap=(4.0, 7.0), start_gap=0.3),
}


@pytest.mark.parametrize("api", ["postgres_system", "sqlite_system", "sqlite_processes_system"], indirect=True)
async def test_faults_lose_nothing(api: tuple[System, Api], request: pytest.FixtureRequest) -> None:
    system, client = api
    await _chaos(system, client, PLANS[request.node.callspec.params["api"]])
