"""Waiting for a run's end (engine/run_watch.py): a watch opened before the run starts answers from the run's
terminal update without reading the run; a watch that hears nothing (the update was lost, or the run ended in
a process that never relayed it) reads the run instead. Both databases."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from flowdeck.domain.statuses import RunStatus
from flowdeck.engine import run_watch
from flowdeck.engine.engine import Engine
from flowdeck.engine.publisher import LocalPublisher
from flowdeck.engine.run_watch import RunWatch
from tests.support.graphs import definition, edge, end, node


def _echo(fail: bool = False) -> dict[str, object]:
    step = node("s", config={"failTimes": 1, "retryable": False} if fail else {})
    return definition(
        [node("start", "start"), step, end(params={"got": "{{ ctx.input }}"})],
        [edge("start", "s"), edge("s", "end", "success")],
    )


@contextmanager
def counted_reads(engine: Engine) -> Iterator[list[str]]:
    """The ids of the runs ``engine.state.get_instance`` reads meanwhile."""
    state, reads = engine.state, []
    original = state.get_instance

    async def counted(instance_id: str):  # type: ignore[no-untyped-def]
        reads.append(instance_id)
        return await original(instance_id)

    state.get_instance = counted  # type: ignore[method-assign]
    try:
        yield reads
    finally:
        del state.get_instance  # the class's method again


async def test_a_run_watched_from_before_its_start_is_answered_without_a_read(
    engine: Engine, tenant_id: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(run_watch, "POLL_SECONDS", 60.0)  # a slow machine's run is not read in between either
    done, failing = [(await engine.create_workflow(tenant_id, _echo(fail))).id for fail in (False, True)]
    with counted_reads(engine) as reads:
        with engine.watch_run() as watch:
            run_id = await engine.start_workflow_run(tenant_id, done, [1, 2], instance_id=watch.instance_id)
            completed = await watch.outcome(20, opened_before_start=True)
        assert run_id == watch.instance_id
        with engine.watch_run() as watch:
            failed_id = await engine.start_workflow_run(tenant_id, failing, 3, instance_id=watch.instance_id)
            failed = await watch.outcome(20, opened_before_start=True)
        assert reads == []
    assert completed.status is RunStatus.COMPLETED and completed.output == {"got": [1, 2]}
    assert failed.status is RunStatus.FAILED and "planned failure on attempt 1" in (failed.error or "")
    for outcome, instance_id in ((completed, run_id), (failed, failed_id)):  # what the log says, exactly
        record = await engine.wait_for_run(instance_id, 1)
        assert (record.status, record.output, record.error) == (outcome.status, outcome.output, outcome.error)


async def test_a_watch_that_hears_nothing_reads_the_run(engine: Engine, tenant_id: str) -> None:
    workflow = (await engine.create_workflow(tenant_id, _echo())).id
    deaf = LocalPublisher()  # nothing is ever published here: the run's end can only be read
    with counted_reads(engine) as reads, RunWatch(deaf, engine.state) as watch:
        await engine.start_workflow_run(tenant_id, workflow, "x", instance_id=watch.instance_id)
        async with asyncio.timeout(15):  # it reads every POLL_SECONDS, not only once its 60 s have passed
            outcome = await watch.outcome(60, opened_before_start=True)
    assert outcome.status is RunStatus.COMPLETED and outcome.output == {"got": "x"}
    assert watch.instance_id in reads


async def test_a_wait_that_runs_out_answers_where_the_run_stands(engine: Engine, tenant_id: str) -> None:
    slow = definition(
        [node("start", "start"), node("s", config={"sleep": 30}), end()], [edge("start", "s"), edge("s", "end")]
    )
    workflow = (await engine.create_workflow(tenant_id, slow)).id
    run_id = await engine.start_workflow_run(tenant_id, workflow, None)
    outcome = await engine.wait_for_outcome(run_id, 0.3)
    assert outcome.status is RunStatus.RUNNING and not outcome.ended
    assert await engine.cancel_run(run_id)
