"""Many runs at once, competing workers, and a worker process killed with SIGKILL."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from flowdeck.engine.engine import Engine
from flowdeck.storage.database import Database
from tests.support.graphs import diamond, linear, node
from tests.support.handlers import make_test_registry
from tests.support.runs import read_outcome, rescue, start

ROOT = Path(__file__).resolve().parents[2]


async def test_100_concurrent_linear_runs_all_complete(engine: Engine, tenant_id: str) -> None:
    workflow = await engine.create_workflow(tenant_id, linear(5))
    ids = await asyncio.gather(*(engine.start_workflow_run(tenant_id, workflow.id, {"i": i}) for i in range(100)))
    runs = await asyncio.gather(*(engine.wait_for_run(i, 60) for i in ids))
    assert [r.status.value for r in runs] == ["COMPLETED"] * 100
    assert {r.output["last"] for r in runs} == {"s5"}


async def test_two_competing_workers_start_every_join_exactly_once(
    db: Database, engine: Engine, tenant_id: str
) -> None:
    second = Engine(db, make_test_registry(), lease_seconds=2.0, poll_interval=0.01, worker_id="second")
    await second.start()
    try:
        # Branches finish close together, so the two workers race on the same join barriers.
        workflow = await engine.create_workflow(tenant_id, diamond(4, "all"))
        ids = await asyncio.gather(*(engine.start_workflow_run(tenant_id, workflow.id) for _ in range(50)))
        runs = await asyncio.gather(*(engine.wait_for_run(i, 60) for i in ids))
        assert [r.status.value for r in runs] == ["COMPLETED"] * 50
        owners = set()
        for instance_id in ids:
            outcome = await read_outcome(engine, instance_id)
            assert outcome.count("NODE_STARTED", "join") == 1
            assert outcome.count("NODE_DISPATCHED", "join") == 1
            assert outcome.per_node("NODE_COMPLETED") == dict.fromkeys(
                ["start", "b1", "b2", "b3", "b4", "join", "end"], 1
            )
            owners.add(outcome.run.id)
        assert len(owners) == 50
    finally:
        await second.stop()


async def test_a_killed_worker_process_is_replaced_after_its_lease(database_url: str, db: Database) -> None:
    """A real ``flowdeck worker`` process takes the node, dies by SIGKILL, and another worker finishes the run."""
    env = {**os.environ, "FLOWDECK_DATABASE_URL": database_url, "FLOWDECK_WORKER_CONCURRENCY": "4"}
    worker = subprocess.Popen(
        [sys.executable, "-m", "tests.support.step_worker", "--lease-seconds", "1.5"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        assert worker.stdout is not None
        assert "running" in worker.stdout.readline()
        submitter = Engine(db, make_test_registry())  # starts runs, runs no worker
        await submitter.start(with_worker=False)
        tenant_id = await submitter.tenants.ensure("acme")
        d = linear(2)
        d["nodes"][1] = node("s1", config={"sleep": 3})
        instance_id = await start(submitter, tenant_id, d)
        await _wait_for_started(submitter, instance_id, "s1")
        os.kill(worker.pid, signal.SIGKILL)
        worker.wait(5)
        killed_at = time.time()
        run, outcome = await rescue(db, instance_id, lease_seconds=1.5)
        assert run.status.value == "COMPLETED"
        assert outcome.per_node("NODE_COMPLETED") == dict.fromkeys(["start", "s1", "s2", "end"], 1)
        s1_done = next(r.created_at for r in outcome.rows if r.event_type == "NODE_COMPLETED" and r.node_id == "s1")
        assert s1_done - killed_at >= 3  # it ran again from the start, after the lease expired
        # The takeover is the next attempt, started by the rescuer: its own NODE_STARTED row says so.
        started = [
            (r.node_attempt, r.payload) for r in outcome.rows if r.event_type == "NODE_STARTED" and r.node_id == "s1"
        ]
        assert started[1] == (2, {"workerId": "rescuer", "takeovers": 1})
        assert started[0][0] == 1 and started[0][1]["workerId"] != "rescuer"  # the killed worker's
        assert (outcome.nodes["s1"].attempt, outcome.nodes["s1"].worker_id) == (2, "rescuer")
    finally:
        if worker.poll() is None:
            worker.kill()
            worker.wait(5)
        if worker.stdout is not None:
            worker.stdout.close()


async def _wait_for_started(engine: Engine, instance_id: str, node_id: str) -> None:
    for _ in range(250):
        if any(
            r.event_type == "NODE_STARTED" and r.node_id == node_id for r in await engine.state.read_log(instance_id)
        ):
            return
        await asyncio.sleep(0.02)
    raise AssertionError(f"{node_id} never started")
