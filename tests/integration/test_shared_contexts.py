"""A fan-out's branches share one read of their context (engine/executor.py), also in a process that claims a
batch of them and starts them all at the same moment: it used to read the log once per branch (556 reads
instead of 16 in four fan-outs of 1,000 run by four worker processes, a fifth of their CPU)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from flowdeck.engine.engine import Engine
from flowdeck.engine.executor import NodeExecutor
from flowdeck.engine.outcomes import Completed
from flowdeck.engine.plans import PlanCache
from flowdeck.storage.records import Job
from tests.support.graphs import diamond
from tests.support.runs import run_to_end, start


def fresh_executor(engine: Engine, monkeypatch: pytest.MonkeyPatch) -> tuple[NodeExecutor, list[Any]]:
    """The executor of a process that has run none of the run's nodes, counting its context reads."""
    reads: list[Any] = []
    original = engine.state.assemble_context

    async def counted(instance_id: str, node_ids: Any, iteration: str = "", **kw: Any) -> Any:
        reads.append(sorted(node_ids))
        await asyncio.sleep(0)  # let the other branches ask while this read is under way
        return await original(instance_id, node_ids, iteration, **kw)

    monkeypatch.setattr(engine.state, "assemble_context", counted)
    plans = PlanCache(engine.state, engine.workflows, engine.registry.default_handles())
    return NodeExecutor(engine.state, plans, engine.registry), reads


def branch(run_id: str, node_id: str, attempt: int = 1) -> Job:
    return Job(id=0, instance_id=run_id, node_id=node_id, iteration="", attempt=attempt)


async def test_a_batch_of_branches_started_at_once_reads_their_context_once(
    engine: Engine, tenant_id: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    run_id = (await run_to_end(engine, tenant_id, diamond(12), {"n": 7})).run.id
    executor, reads = fresh_executor(engine, monkeypatch)
    results = await asyncio.gather(*(executor.run(branch(run_id, f"b{i}")) for i in range(1, 13)))
    assert reads == [["start"]]
    for outcome, context in results:
        assert isinstance(outcome, Completed)
        assert context is not None and context["input"] == {"n": 7}
    # the join's ancestors differ: a read of its own; a retried attempt is not shared
    await executor.run(branch(run_id, "join"))
    await executor.run(branch(run_id, "b1", attempt=2))
    assert len(reads) == 3 and reads[1][0] == "b1" and reads[2] == ["start"]


async def test_a_failed_shared_read_fails_each_branch_waiting_for_it_and_is_not_kept(
    engine: Engine, tenant_id: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    run_id = await start(engine, tenant_id, diamond(3))
    await engine.wait_for_run(run_id, 20)
    executor, reads = fresh_executor(engine, monkeypatch)
    counted = engine.state.assemble_context
    failures = iter([RuntimeError("connection lost")])

    async def failing_once(*args: Any, **kw: Any) -> Any:
        error = next(failures, None)
        result = await counted(*args, **kw)
        if error is not None:
            raise error
        return result

    monkeypatch.setattr(engine.state, "assemble_context", failing_once)
    first = await asyncio.gather(*(executor.run(branch(run_id, f"b{i}")) for i in range(1, 4)))
    assert [type(outcome).__name__ for outcome, _ in first] == ["Failed"] * 3
    assert len(reads) == 1
    outcome, context = await executor.run(branch(run_id, "b1"))
    assert isinstance(outcome, Completed) and context is not None
    assert len(reads) == 2
