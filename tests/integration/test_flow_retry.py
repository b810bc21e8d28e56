"""A partial retry respects the workflow's options.concurrency as a new run does (issue 23 item 4): with its
group full it queues (PENDING, saying why) until a slot frees, ``cancel_in_progress`` cancels the run holding
the slot, ``cancel_newest`` refuses the retry (the run stays FAILED, to be retried later). Both databases."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from flowdeck.domain.statuses import RunStatus
from flowdeck.engine.engine import Engine
from flowdeck.engine.flow_control import RetryRefusedError, waiting_reason
from flowdeck.storage.database import Database
from flowdeck.storage.flow import run_flow_of
from tests.integration.test_flow_control import _status, _wait_for_status
from tests.support.graphs import definition, edge, end, node
from tests.support.handlers import make_test_registry
from tests.support.runs import read_outcome

HOLD_SECONDS = 3.0
"""How long the run holding the group's slot works: the retry is asked for meanwhile."""


def _flaky(strategy: str) -> dict[str, Any]:
    """``work`` fails its first ``input.fail`` attempts (no automatic retry) after ``input.sleep`` seconds."""
    return definition(
        [
            node("start", "start"),
            node(
                "work",
                config={"failTimes": "{{ ctx.input.fail }}", "sleep": "{{ ctx.input.sleep }}"},
                retry={"maxAttempts": 1},
            ),
            end(),
        ],
        [edge("start", "work"), edge("work", "end", "success")],
        concurrency={"limit": 1, "key": "{{ ctx.input.customer }}", "strategy": strategy},
    )


@pytest.fixture
async def engine(db: Database) -> AsyncIterator[Engine]:
    engine = Engine(db, make_test_registry(), lease_seconds=5.0, poll_interval=0.05)
    await engine.start()
    try:
        yield engine
    finally:
        await engine.stop()


async def _failed_then_holder(engine: Engine, strategy: str) -> tuple[str, str]:
    """A FAILED run of group 'acme', then a second run of it holding the group's one slot."""
    tenant_id = await engine.tenants.ensure(f"retry-{strategy}")
    workflow_id = (await engine.create_workflow(tenant_id, _flaky(strategy))).id
    failed = await engine.start_workflow_run(tenant_id, workflow_id, {"customer": "acme", "fail": 1, "sleep": 0})
    assert (await engine.wait_for_run(failed, 30)).status is RunStatus.FAILED
    holder = await engine.start_workflow_run(
        tenant_id, workflow_id, {"customer": "acme", "fail": 0, "sleep": HOLD_SECONDS}
    )
    assert await _status(engine, holder) is RunStatus.RUNNING
    return failed, holder


async def test_a_retry_waits_for_its_groups_slot_saying_why(db: Database, engine: Engine) -> None:
    failed, holder = await _failed_then_holder(engine, "queue")
    assert await engine.retry_run(failed) == ["work"]

    assert await _status(engine, failed) is RunStatus.PENDING
    async with db.read() as conn:
        reason = waiting_reason(await run_flow_of(conn, failed), RunStatus.PENDING)
    assert reason is not None and "options.concurrency allows 1 run(s)" in reason and "'acme'" in reason
    statuses = [r for r in (await read_outcome(engine, failed)).rows if r.event_type == "RUN_STATUS"]
    assert statuses[-1].payload["status"] == "PENDING" and "partial retry; queued" in statuses[-1].payload["reason"]

    held, retried = await engine.wait_for_run(holder, 30), await engine.wait_for_run(failed, 30)
    assert held.status is RunStatus.COMPLETED and retried.status is RunStatus.COMPLETED
    rows = (await read_outcome(engine, failed)).rows
    second_start = [r for r in rows if r.event_type == "NODE_STARTED" and r.node_id == "work"][-1]
    assert second_start.node_attempt == 2
    assert held.completed_at is not None and second_start.created_at >= held.completed_at  # never two at once


async def test_a_retry_with_cancel_in_progress_cancels_the_run_holding_the_slot(engine: Engine) -> None:
    failed, holder = await _failed_then_holder(engine, "cancel_in_progress")
    assert await engine.retry_run(failed) == ["work"]
    cancelled = await engine.wait_for_run(holder, 30)
    assert cancelled.status is RunStatus.CANCELLED
    assert cancelled.error is not None and f"cancelled by run {failed}" in cancelled.error
    assert (await engine.wait_for_run(failed, 30)).status is RunStatus.COMPLETED


async def test_a_retry_with_cancel_newest_is_refused_and_the_run_stays_failed(engine: Engine) -> None:
    failed, holder = await _failed_then_holder(engine, "cancel_newest")
    with pytest.raises(RetryRefusedError, match=r"was not retried: 1 run\(s\) .* options.concurrency.limit \(1\)"):
        await engine.retry_run(failed)
    assert await _status(engine, failed) is RunStatus.FAILED
    assert await _status(engine, holder) is RunStatus.RUNNING  # the newest loses: the holder goes on

    assert (await engine.wait_for_run(holder, 30)).status is RunStatus.COMPLETED
    assert await engine.retry_run(failed) == ["work"]  # the group has room now
    await _wait_for_status(engine, failed, RunStatus.COMPLETED)
