"""Approval waits in the engine (docs/waits.md "Approvals"), on both databases: a pending approval survives a
restart of every process and is decided on the new one; a decision in one engine racing the timeout claimed by
another engine's handler (two processes' worth of connections) leaves exactly one winner."""

from __future__ import annotations

import asyncio
import time
from typing import Any

from flowdeck.domain.statuses import NodeStatus, RunStatus
from flowdeck.engine.engine import Engine
from flowdeck.storage.approvals import Decider
from flowdeck.storage.database import Database
from tests.support.graphs import definition, edge, end, node
from tests.support.handlers import make_test_registry
from tests.support.runs import read_outcome, start


def approval(**config: Any) -> dict[str, Any]:
    return definition(
        [
            node("start", "start"),
            node("ok", "wait", config={"resumeOn": "approval", **config}),
            end(params={"got": "{{ ctx.ok.decision }}"}),
            end("late", params={"late": True}),
        ],
        [edge("start", "ok"), edge("ok", "end", "success"), edge("ok", "late", "timeout")],
        timeoutSeconds=600,
    )


async def parked_approval(engine: Engine, instance_id: str) -> str:
    deadline = time.monotonic() + 15
    while True:
        view = (await read_outcome(engine, instance_id)).nodes.get("ok")
        if view is not None and view.status is NodeStatus.WAITING and view.waiting_for:
            return str(view.waiting_for["approvalId"])
        assert time.monotonic() < deadline
        await asyncio.sleep(0.05)


async def test_a_pending_approval_survives_a_restart(db: Database) -> None:
    first = Engine(db, make_test_registry(), lease_seconds=2.0, poll_interval=0.05)
    await first.start()
    tenant_id = await first.tenants.ensure("acme")
    run_id = await start(first, tenant_id, approval())
    approval_id = await parked_approval(first, run_id)
    await first.stop()

    second = Engine(db, make_test_registry(), lease_seconds=2.0, poll_interval=0.05)
    await second.start()
    try:
        row = await second.approvals.get(tenant_id, approval_id)
        assert row is not None and row.pending
        answer, _ = await second.decide_approval(row, Decider("u-1", "ann@acme.test"), "approve", None)
        assert answer == "resolved"
        await second.wait_for_run(run_id, 20)
        outcome = await read_outcome(second, run_id)
        assert outcome.run.status is RunStatus.COMPLETED and outcome.run.output == {"got": "approve"}
        assert outcome.count("NODE_COMPLETED", "ok") == 1
    finally:
        await second.stop()


async def test_a_decision_and_a_timeout_in_two_engines_one_wins(db: Database) -> None:
    deciding = Engine(db, make_test_registry(), lease_seconds=2.0, poll_interval=0.05)
    timing = Engine(db, make_test_registry(), lease_seconds=2.0, poll_interval=0.05)
    await deciding.start()
    await timing.start()
    try:
        tenant_id = await deciding.tenants.ensure("acme")
        for n in range(5):
            run_id = await start(deciding, tenant_id, approval(timeoutSeconds=600))
            approval_id = await parked_approval(deciding, run_id)
            row = await deciding.approvals.get(tenant_id, approval_id)
            assert row is not None
            (answer, _), timed_out = await asyncio.gather(
                deciding.decide_approval(row, Decider(f"u-{n}", "ann@acme.test"), "approve", None),
                timing.waits.time_out(run_id, "ok", ""),
            )
            assert (answer == "resolved") != timed_out, (answer, timed_out)
            if timed_out:
                assert answer == "closed"
                await timing.cancel_run(run_id)  # its node stays parked until its own timeout: end it here
            else:
                await deciding.wait_for_run(run_id, 20)
                assert (await read_outcome(deciding, run_id)).run.output == {"got": "approve"}
    finally:
        await deciding.stop()
        await timing.stop()
