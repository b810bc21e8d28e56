"""A run's start node runs on the context its first transaction wrote (``state.run_context``), without reading it
back: what the engine knows is what the log folds (``assemble_context``), for every kind of start (production,
PostgreSQL's one-statement start among them, a test run whose definition the context hides, a run whose wait
node gave it resume URLs, a run with labels). Both databases."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from flowdeck.domain.statuses import RunStatus
from flowdeck.engine.engine import Engine
from tests.support.graphs import definition, edge, end, node


def _plain() -> dict[str, Any]:
    return definition(
        [node("start", "start"), node("s"), end(params={"got": "{{ ctx.input }}"})],
        [edge("start", "s"), edge("s", "end", "success")],
    )


def _waiting() -> dict[str, Any]:
    wait = node("w", "wait", config={"resumeOn": "webhook", "timeoutSeconds": 600})
    return definition([node("start", "start"), wait, end()], [edge("start", "w"), edge("w", "end")])


@contextmanager
def known_and_read(engine: Engine) -> Iterator[tuple[dict[str, dict[str, Any]], list[str]]]:
    """The start contexts the engine was told (by run) and the runs whose start node read its context."""
    executor, known, reads = engine.executor, {}, []
    remember, assemble = executor.know_start_context, engine.state.assemble_context

    def told(instance_id: str, graph: Any, context: dict[str, Any]) -> None:
        known[instance_id] = context
        remember(instance_id, graph, context)

    async def read(instance_id: str, node_ids: Any, iteration: str = "", **kwargs: Any) -> dict[str, Any]:
        node_ids = list(node_ids)
        if not node_ids:  # the start node's ancestors: none
            reads.append(instance_id)
        return await assemble(instance_id, node_ids, iteration, **kwargs)

    executor.know_start_context = told  # type: ignore[method-assign]
    engine.state.assemble_context = read  # type: ignore[method-assign]
    try:
        yield known, reads
    finally:
        del executor.know_start_context, engine.state.assemble_context


async def test_a_start_node_runs_on_the_context_its_run_wrote_without_reading_it(
    engine: Engine, tenant_id: str
) -> None:
    plain = (await engine.create_workflow(tenant_id, _plain())).id
    waiting = (await engine.create_workflow(tenant_id, _waiting())).id
    with known_and_read(engine) as (known, reads):
        production = await engine.start_workflow_run(tenant_id, plain, {"pair": (1, 2), "n": 1.5})
        labelled = await engine.start_workflow_run(tenant_id, plain, [3], labels={"order": "A-1"})
        test_run = await engine.start_test_run(tenant_id, _plain(), {"x": None}, pinned={"s": {"v": 1}})
        parked = await engine.start_workflow_run(tenant_id, waiting, 7)
        for run_id in (production, labelled, test_run):
            assert (await engine.wait_for_run(run_id, 20)).status is RunStatus.COMPLETED
    assert set(known) == {production, labelled, test_run, parked}
    for run_id, context in known.items():
        assert context == await engine.state.assemble_context(run_id, [])
    assert known[production] == {"input": {"pair": [1, 2], "n": 1.5}}  # as the log gives it back: a list
    assert "run" in known[parked]  # the wait node's resume URLs, ctx.run
    assert not any(key.startswith("__workflow") for key in known[test_run])
    assert reads == []
