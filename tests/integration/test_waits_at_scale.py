"""1,000 waiting runs change nothing for other runs (issue 23): every parked wait holds no worker slot (its job
unleased, due only at its timeout) and a normal run started beside them completes. The latency with 0 vs 1,000
waiting is measured, not tested: ``python -m tests.support.wait_latency`` (docs/waits.md)."""

from __future__ import annotations

import time

import pytest

from flowdeck.domain.statuses import RunStatus
from flowdeck.engine.engine import Engine
from flowdeck.storage.database import Database
from tests.support.handlers import make_test_registry
from tests.support.parked_waits import PLAIN, park, wait_jobs
from tests.support.runs import read_outcome, start

pytestmark = pytest.mark.slow


async def test_a_thousand_parked_waits_hold_no_slot_and_a_normal_run_completes(db: Database) -> None:
    engine = Engine(db, make_test_registry(), concurrency=4, poll_interval=0.05)
    await engine.start()
    try:
        tenant_id = await engine.tenants.ensure("acme")
        run_ids = await park(engine, tenant_id, 1000)

        jobs = await wait_jobs(db, run_ids)
        assert len(jobs) == 1000
        assert {owner for owner, _ in jobs} == {None}  # no worker holds a parked wait
        assert min(due for _, due in jobs) > time.time() + 7 * 24 * 3600 - 600  # due only at the timeout

        normal = await start(engine, tenant_id, PLAIN)
        run = await engine.wait_for_run(normal, 30)
        assert run.status is RunStatus.COMPLETED and run.output == {"v": 7}
        assert engine.worker.active_jobs == []  # the worker runs nothing while 1,000 runs wait

        outcome = await read_outcome(engine, run_ids[0])
        assert outcome.run.status is RunStatus.RUNNING and outcome.status_of("hold") == "WAITING"
    finally:
        await engine.stop()
