"""Start-up recovery: what a worker finds when it comes up after others died."""

from __future__ import annotations

import asyncio
import time

import sqlalchemy as sa

from flowdeck.engine.engine import Engine
from flowdeck.storage.database import Database
from flowdeck.storage.tables import instances, node_jobs
from tests.support.graphs import linear
from tests.support.handlers import make_test_registry
from tests.support.runs import read_outcome, start


async def test_a_run_past_its_timeout_is_failed_when_a_worker_starts(db: Database) -> None:
    offline = Engine(db, make_test_registry())
    await offline.start(with_worker=False)  # the run is queued while no worker is up
    tenant_id = await offline.tenants.ensure("acme")
    d = linear(1)
    d["options"] = {"timeoutSeconds": 0.2}
    instance_id = await start(offline, tenant_id, d)
    await asyncio.sleep(0.3)
    worker = Engine(db, make_test_registry(), poll_interval=0.05)
    await worker.start()  # start-up recovery runs before the first claim
    try:
        run = await offline.state.get_instance(instance_id)
        assert run is not None and run.status.value == "FAILED"
        assert run.error == "run timed out: it passed its timeout of 0.2 s (options.timeoutSeconds)"
        outcome = await read_outcome(worker, instance_id)
        assert [r.payload["status"] for r in outcome.rows if r.event_type == "RUN_STATUS"] == ["RUNNING", "FAILED"]
        assert "s1" not in outcome.nodes or outcome.status_of("s1") == "DISPATCHED"  # never started
        assert await worker.state.count_jobs(instance_id) == 0
    finally:
        await worker.stop()


async def test_a_running_run_with_no_work_left_is_recovered_as_failed(db: Database) -> None:
    engine = Engine(db, make_test_registry())
    await engine.start(with_worker=False)
    tenant_id = await engine.tenants.ensure("acme")
    instance_id = await start(engine, tenant_id, linear(1))
    async with db.transaction() as conn:  # what a bug or a lost database write could leave behind
        await conn.execute(node_jobs.delete().where(node_jobs.c.instance_id == instance_id))
        await conn.execute(
            instances.update().where(instances.c.id == instance_id).values(updated_at=time.time() - 3600)
        )
    await engine.worker.sweep(recover_stale=True)
    run = await engine.state.get_instance(instance_id)
    assert run is not None and run.status.value == "FAILED"
    assert run.error is not None and run.error.startswith(
        "recovered: the run was RUNNING with no queued or running node"
    )
    async with db.read() as conn:
        reasons = (
            await conn.execute(
                sa.text("SELECT count(*) FROM instance_logs WHERE instance_id = :i AND event_type = 'RUN_STATUS'"),
                {"i": instance_id},
            )
        ).scalar_one()
    assert reasons == 2
