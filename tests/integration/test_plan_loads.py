"""A run's plan is read and built once however many of its jobs ask for it at the same moment (engine/plans.py).

A worker process that claims a batch of a wide fan-out it has not seen yet asks for the plan once per job;
each used to read the run and build the whole graph again (98 builds of a 1,000-node graph instead of 8 in
two runs across four worker processes).
"""

from __future__ import annotations

import asyncio
from collections import Counter
from typing import Any

import pytest

from flowdeck.engine.engine import Engine
from flowdeck.engine.plans import PlanCache, RunNotFoundError
from tests.support.graphs import diamond
from tests.support.runs import start


def fresh_cache(engine: Engine, monkeypatch: pytest.MonkeyPatch) -> tuple[PlanCache, Counter[str]]:
    """The plan cache of a process that has seen no run yet, counting what it reads."""
    reads: Counter[str] = Counter()
    for owner, name in (
        (engine.state, "get_instance"),
        (engine.state, "load_test_definition"),
        (engine.workflows, "definition"),
    ):
        original = getattr(owner, name)

        async def counted(*args: Any, _original: Any = original, _name: str = name) -> Any:
            reads[_name] += 1
            await asyncio.sleep(0)  # let the other callers arrive while this read is under way
            return await _original(*args)

        monkeypatch.setattr(owner, name, counted)
    return PlanCache(engine.state, engine.workflows, engine.registry.default_handles()), reads


async def test_a_test_runs_plan_asked_for_by_many_jobs_at_once_is_read_once(
    engine: Engine, tenant_id: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    run_id = await engine.start_test_run(tenant_id, diamond(50))
    cache, reads = fresh_cache(engine, monkeypatch)
    plans = await asyncio.gather(*(cache.get(run_id) for _ in range(20)))
    assert reads == {"get_instance": 1, "load_test_definition": 1}
    assert all(plan is plans[0] for plan in plans)
    assert len(plans[0].graph.nodes) == 53
    assert await cache.get(run_id) is plans[0]  # and kept
    assert reads["get_instance"] == 1


async def test_runs_of_one_version_seen_first_at_once_build_its_graph_once(
    engine: Engine, tenant_id: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = await start(engine, tenant_id, diamond(10))
    run = await engine.state.get_instance(first)
    assert run is not None and run.workflow_id is not None
    workflow_id = run.workflow_id
    others = [await engine.start_workflow_run(tenant_id, workflow_id) for _ in range(5)]
    cache, reads = fresh_cache(engine, monkeypatch)
    plans = await asyncio.gather(*(cache.get(run_id) for run_id in [first, *others] for _ in range(3)))
    assert reads == {"get_instance": 6, "definition": 1}
    assert len({id(plan.graph) for plan in plans}) == 1
    assert len({plan.instance_id for plan in plans}) == 6


async def test_a_caller_cancelled_while_the_plan_loads_leaves_the_others_their_plan(
    engine: Engine, tenant_id: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    run_id = await engine.start_test_run(tenant_id, diamond(3))
    cache, reads = fresh_cache(engine, monkeypatch)
    impatient = asyncio.ensure_future(cache.get(run_id))
    patient = asyncio.ensure_future(cache.get(run_id))
    await asyncio.sleep(0)  # both are waiting for the one load
    impatient.cancel()
    plan = await patient
    assert impatient.cancelled() and plan.instance_id == run_id
    assert reads["get_instance"] == 1


async def test_an_unknown_run_fails_every_caller_and_is_looked_up_again_next_time(
    engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache, reads = fresh_cache(engine, monkeypatch)
    answers = await asyncio.gather(*(cache.get("no-such-run") for _ in range(5)), return_exceptions=True)
    assert all(isinstance(answer, RunNotFoundError) for answer in answers)
    assert reads["get_instance"] == 1
    with pytest.raises(RunNotFoundError):
        await cache.get("no-such-run")
    assert reads["get_instance"] == 2


async def test_a_plan_forgotten_while_it_loads_is_read_afresh(
    engine: Engine, tenant_id: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A partial retry may move a failed run to another version: the load under way when it is forgotten
    is not kept."""
    run_id = await engine.start_test_run(tenant_id, diamond(3))
    cache, reads = fresh_cache(engine, monkeypatch)
    under_way = asyncio.ensure_future(cache.get(run_id))
    await asyncio.sleep(0)
    cache.forget(run_id)
    await under_way
    await cache.get(run_id)
    assert reads["get_instance"] == 2


async def test_test_runs_of_one_definition_share_its_graph(
    engine: Engine, tenant_id: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The editor's Test run clicked again on an unchanged graph: a process builds that graph once."""
    same = [await engine.start_test_run(tenant_id, diamond(20)) for _ in range(3)]
    other = await engine.start_test_run(tenant_id, diamond(21))
    cache, _reads = fresh_cache(engine, monkeypatch)
    builds: list[Any] = []
    build = cache.build_graph

    def counted(definition: Any) -> Any:
        builds.append(definition)
        return build(definition)

    monkeypatch.setattr(cache, "build_graph", counted)
    plans = [await cache.get(run_id) for run_id in [*same, other]]
    assert len(builds) == 2
    assert plans[0].graph is plans[1].graph is plans[2].graph
    assert len(plans[0].graph.nodes) == 23 and len(plans[3].graph.nodes) == 24
    assert len({plan.instance_id for plan in plans}) == 4
