"""A run's stored-output budget (FLOWDECK_MAX_RUN_BYTES, issue 21): every output the run stores is
counted as it is written, a loop's collected items as they arrive, and the node that would go past
the budget fails, naming the setting, with nothing of its output stored. Both databases."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from flowdeck.engine.engine import Engine
from flowdeck.engine.run_limits import RunLimits
from flowdeck.runtime import open_runtime
from flowdeck.settings import Settings
from flowdeck.storage.database import Database
from flowdeck.storage.tables import instances
from tests.support.graphs import definition, edge, end, linear, node
from tests.support.handlers import make_test_registry
from tests.support.runs import read_outcome, run_to_end

BUDGET = 100_000
BLOB = "x" * 10_000  # 10,002 bytes of JSON


@pytest.fixture
async def small_engine(db: Database) -> AsyncIterator[Engine]:
    eng = Engine(
        db, make_test_registry(), lease_seconds=2.0, poll_interval=0.05, limits=RunLimits(max_run_bytes=BUDGET)
    )
    await eng.start()
    yield eng
    await eng.stop()


def _loop_of_blobs(count: int, **loop_config: Any) -> dict[str, Any]:
    """The finding, scaled down: a loop whose body returns a large string per item."""
    return definition(
        [
            node("start", "start"),
            node("each", "loop", config={"items": list(range(count)), **loop_config}),
            node("big", config={"output": "{{ ctx.input.blob }}"}),
            end(params={"result": "{{ ctx.each.count }}"}),
        ],
        [edge("start", "each"), edge("each", "big", "loop"), edge("each", "end", "done")],
    )


async def _stored_bytes(db: Database, instance_id: str) -> int:
    async with db.read() as conn:
        return int(
            (await conn.execute(sa.select(instances.c.output_bytes).where(instances.c.id == instance_id))).scalar_one()
        )


@pytest.mark.parametrize("concurrency", [1, 5])
async def test_a_loop_of_large_items_fails_at_the_budget_naming_the_setting(
    small_engine: Engine, db: Database, concurrency: int
) -> None:
    tenant_id = await small_engine.tenants.ensure("attacker")
    outcome = await run_to_end(small_engine, tenant_id, _loop_of_blobs(30, concurrency=concurrency), {"blob": BLOB})
    assert outcome.run.status == "FAILED"
    assert "FLOWDECK_MAX_RUN_BYTES" in (outcome.run.error or "")
    assert "node 'big'" in (outcome.run.error or "")
    failed = [r for r in outcome.rows if r.event_type == "NODE_FAILED" and r.node_id == "big"]
    assert failed and failed[0].payload["error"]["type"] == "RunOutputBudgetExceeded"
    assert failed[0].payload["retry"] is False
    # Each stored item costs twice (its own row and the loop's collected copy): 4 fit in 100,000 bytes.
    stored = [r for r in outcome.rows if r.event_type == "NODE_COMPLETED" and r.node_id == "big"]
    assert len(stored) == 4
    assert outcome.count("NODE_COMPLETED", "each") == 0
    assert await _stored_bytes(db, outcome.run.id) <= BUDGET
    assert sum(len(r.payload["output"]) for r in stored) <= BUDGET // 2


async def test_a_run_within_its_budget_completes_and_counts_what_it_stored(small_engine: Engine, db: Database) -> None:
    tenant_id = await small_engine.tenants.ensure("acme")
    outcome = await run_to_end(small_engine, tenant_id, _loop_of_blobs(3), {"blob": BLOB})
    assert outcome.run.status == "COMPLETED", outcome.run.error
    stored = await _stored_bytes(db, outcome.run.id)
    assert 6 * len(BLOB) < stored < BUDGET


async def test_a_chain_node_past_the_budget_fails_and_its_error_edge_may_catch_it(small_engine: Engine) -> None:
    tenant_id = await small_engine.tenants.ensure("acme")
    d = definition(
        [
            node("start", "start"),
            node("huge", config={"output": "{{ 'y' * ctx.input.size }}"}, errorHandling="continue"),
            node("recover", config={"output": "{{ ctx.huge.error.type }}"}),
            end(params={"caught": "{{ ctx.recover }}"}),
        ],
        [edge("start", "huge"), edge("huge", "recover", "error"), edge("recover", "end")],
    )
    outcome = await run_to_end(small_engine, tenant_id, d, {"size": BUDGET + 1})
    assert outcome.run.status == "COMPLETED", outcome.run.error
    assert outcome.run.output == {"caught": "RunOutputBudgetExceeded"}
    assert outcome.count("NODE_COMPLETED", "huge") == 1  # the error output only, on the error edge
    assert "FLOWDECK_MAX_RUN_BYTES" in outcome.nodes["huge"].output["error"]["message"]


async def test_the_end_output_counts_twice(small_engine: Engine) -> None:
    """The end's output is stored twice (its row and the run's output): half the budget is its limit."""
    tenant_id = await small_engine.tenants.ensure("acme")
    d = linear(1)
    d["nodes"][-1]["config"] = {"outputParameters": {"v": "{{ 'z' * ctx.input.size }}"}}
    fits = await run_to_end(small_engine, tenant_id, d, {"size": BUDGET // 2 - 1_000})
    assert fits.run.status == "COMPLETED", fits.run.error
    past = await run_to_end(small_engine, tenant_id, d, {"size": BUDGET // 2 + 1_000})
    assert past.run.status == "FAILED"
    assert "FLOWDECK_MAX_RUN_BYTES" in (past.run.error or "")
    assert past.run.output is None
    again = await read_outcome(small_engine, past.run.id)
    assert again.count("NODE_COMPLETED", "end") == 0


def test_the_budget_is_read_from_the_environment_with_a_clear_error() -> None:
    assert Settings.from_env({}).max_run_bytes == 64 * 1024 * 1024
    assert Settings.from_env({"FLOWDECK_MAX_RUN_BYTES": "1048576"}).max_run_bytes == 1_048_576
    with pytest.raises(ValueError, match="FLOWDECK_MAX_RUN_BYTES must be an integer"):
        Settings.from_env({"FLOWDECK_MAX_RUN_BYTES": "64MiB"})
    with pytest.raises(ValueError, match="FLOWDECK_MAX_RUN_BYTES must be at least 1024"):
        Settings.from_env({"FLOWDECK_MAX_RUN_BYTES": "10"})


async def test_a_running_flowdeck_applies_the_configured_budget(tmp_path: Path) -> None:
    env = {
        "FLOWDECK_DATABASE_URL": f"sqlite+aiosqlite:///{tmp_path / 'flowdeck.db'}",
        "FLOWDECK_MAX_RUN_BYTES": "5000",
    }
    async with open_runtime(Settings.from_env(env), with_scheduler=False) as runtime:
        engine = runtime.engine
        tenant_id = await engine.tenants.ensure("acme")
        d = definition(
            [node("start", "start"), end(params={"v": "{{ 'z' * 3000 }}"})],  # stored twice: 6,000 bytes
            [edge("start", "end")],
        )
        outcome = await run_to_end(engine, tenant_id, d)
    assert outcome.run.status == "FAILED"
    assert "past the run's budget of 5,000 bytes (FLOWDECK_MAX_RUN_BYTES)" in (outcome.run.error or "")


async def test_a_result_delivered_twice_is_charged_once_even_when_the_second_would_not_fit(db: Database) -> None:
    """A duplicate delivery changes nothing: not the counter, and no NODE_FAILED for an attempt that completed."""
    engine = Engine(db, make_test_registry(), lease_seconds=60.0, limits=RunLimits(max_run_bytes=BUDGET))
    await engine.start(with_worker=False)
    try:
        tenant_id = await engine.tenants.ensure("acme")
        d = definition(
            [node("start", "start"), node("big", config={"output": "{{ 'x' * 60000 }}"}), end()],
            [edge("start", "big"), edge("big", "end")],
        )
        workflow = await engine.create_workflow(tenant_id, d)
        run_id = await engine.start_workflow_run(tenant_id, workflow.id)
        for node_id in ("start", "big"):
            [job] = await engine.state.claim_jobs("driver", 1, 60.0)
            assert job.node_id == node_id
            outcome, _ = await engine.executor.run(job)
            await engine.orchestrator.handle_result(job, outcome)
        counted = await _stored_bytes(db, run_id)
        await engine.orchestrator.handle_result(job, outcome)  # 60,002 more would not fit: a duplicate all the same
        assert await _stored_bytes(db, run_id) == counted
        outcome_now = await read_outcome(engine, run_id)
        assert outcome_now.count("NODE_FAILED") == 0 and outcome_now.count("NODE_COMPLETED", "big") == 1
        assert outcome_now.run.status == "RUNNING"  # the end node is queued, nothing else happened
    finally:
        await engine.stop()
