"""The loop node (SPEC §2): one pass per item, concurrency, nesting, results in item order."""

from __future__ import annotations

import asyncio
from typing import Any

import sqlalchemy as sa

from flowdeck.domain.scopes import visible_scopes
from flowdeck.engine.engine import Engine
from flowdeck.engine.orchestrator import Completed
from flowdeck.storage.database import Database
from flowdeck.storage.log_fold import fold_context
from flowdeck.storage.records import Job
from flowdeck.storage.tables import instances
from tests.support.graphs import definition, edge, end, node
from tests.support.handlers import make_test_registry
from tests.support.runs import Outcome, read_outcome, rescue, run_to_end, start


def loop_over(items: Any, body: list[dict[str, Any]], body_edges: list[dict[str, Any]], **loop_config: Any) -> dict:
    """start -> each (loop) -> body... ; each -done-> end (output = the loop's output)."""
    entry = body[0]["id"]
    return definition(
        [
            node("start", "start"),
            node("each", "loop", config={"items": items, **loop_config}),
            *body,
            end(params={"result": "{{ ctx.each }}"}),
        ],
        [edge("start", "each"), edge("each", entry, "loop"), *body_edges, edge("each", "end", "done")],
    )


def iterations_of(outcome: Outcome, node_id: str) -> list[str]:
    return sorted(r.iteration for r in outcome.rows if r.event_type == "NODE_COMPLETED" and r.node_id == node_id)


async def test_the_body_runs_once_per_item_and_results_keep_item_order(engine: Engine, tenant_id: str) -> None:
    d = loop_over("{{ ctx.input.numbers }}", [node("times", config={"output": "{{ ctx.loop.item * 10 }}"})], [])
    outcome = await run_to_end(engine, tenant_id, d, {"numbers": [1, 2, 3]})
    assert outcome.run.status == "COMPLETED"
    assert outcome.run.output == {"result": {"items": [10, 20, 30], "count": 3}}
    assert iterations_of(outcome, "times") == ["0", "1", "2"]
    assert outcome.nodes["times"].iterations["2"].output == 30
    assert outcome.nodes["each"].status.value == "COMPLETED"


async def test_the_loop_context_names_item_index_and_count(engine: Engine, tenant_id: str) -> None:
    d = loop_over(["a", "b"], [node("echo", config={"output": "{{ ctx.loop }}"})], [])
    outcome = await run_to_end(engine, tenant_id, d)
    assert outcome.run.output["result"]["items"] == [
        {"item": "a", "index": 0, "count": 2},
        {"item": "b", "index": 1, "count": 2},
    ]


async def test_an_empty_list_goes_straight_to_done(engine: Engine, tenant_id: str) -> None:
    d = loop_over([], [node("never")], [])
    outcome = await run_to_end(engine, tenant_id, d)
    assert outcome.run.status == "COMPLETED"
    assert outcome.run.output == {"result": {"items": [], "count": 0}}
    assert "never" not in outcome.nodes


async def test_a_chain_body_passes_values_along_within_each_iteration(engine: Engine, tenant_id: str) -> None:
    body = [
        node("first", config={"output": "{{ ctx.loop.item + 1 }}"}),
        node("second", config={"output": "{{ ctx.first * 2 }}"}),
    ]
    outcome = await run_to_end(engine, tenant_id, loop_over([1, 5], body, [edge("first", "second")]))
    assert outcome.run.output == {"result": {"items": [4, 12], "count": 2}}


async def test_several_sinks_give_an_object_per_iteration(engine: Engine, tenant_id: str) -> None:
    body = [
        node("split"),
        node("left", config={"output": "L{{ ctx.loop.index }}"}),
        node("right", config={"output": "R"}),
    ]
    d = loop_over([0, 1], body, [edge("split", "left"), edge("split", "right")])
    outcome = await run_to_end(engine, tenant_id, d)
    assert outcome.run.output["result"]["items"] == [{"left": "L0", "right": "R"}, {"left": "L1", "right": "R"}]


async def test_concurrency_runs_iterations_side_by_side(engine: Engine, tenant_id: str) -> None:
    parallel = await run_to_end(
        engine, tenant_id, loop_over([1, 2, 3, 4], [node("slow", config={"sleep": 0.3})], [], concurrency=4)
    )
    serial = await run_to_end(
        engine, tenant_id, loop_over([1, 2, 3], [node("slow", config={"sleep": 0.2})], [], concurrency=1)
    )
    for outcome in (parallel, serial):
        assert outcome.run.status == "COMPLETED"
    p = parallel.run
    assert p.completed_at is not None and p.started_at is not None and p.completed_at - p.started_at < 1.0
    spans = _spans(serial, "slow")
    assert all(spans[i][1] <= spans[i + 1][0] for i in range(len(spans) - 1))  # one at a time, in order


async def test_nested_loops_carry_nested_iteration_paths(engine: Engine, tenant_id: str) -> None:
    d = definition(
        [
            node("start", "start"),
            node("outer", "loop", config={"items": "{{ ctx.input.groups }}", "concurrency": 2}),
            node("inner", "loop", config={"items": "{{ ctx.loop.item }}"}),
            node("double", config={"output": "{{ ctx.loop.item * 2 }}"}),
            end(params={"result": "{{ ctx.outer.items }}"}),
        ],
        [
            edge("start", "outer"),
            edge("outer", "inner", "loop"),
            edge("inner", "double", "loop"),
            edge("outer", "end", "done"),
        ],
    )
    outcome = await run_to_end(engine, tenant_id, d, {"groups": [[1, 2], [3], []]})
    assert outcome.run.status == "COMPLETED"
    assert outcome.run.output == {
        "result": [{"items": [2, 4], "count": 2}, {"items": [6], "count": 1}, {"items": [], "count": 0}]
    }
    assert iterations_of(outcome, "double") == ["0.0", "0.1", "1.0"]
    assert iterations_of(outcome, "inner") == ["0", "1", "2"]
    # The run view: each iteration under the body node that ran in it, with the ctx.loop it received.
    nodes = outcome.nodes
    assert not nodes["outer"].iterations and set(nodes["inner"].iterations) == {"0", "1", "2"}  # no phantoms
    assert nodes["double"].iterations["0.1"].loop == {"item": 2, "index": 1, "count": 2}  # the inner loop's
    assert nodes["inner"].iterations["1"].loop == {"item": [3], "index": 1, "count": 3}  # the outer loop's
    assert nodes["double"].iterations["1.0"].output == 6
    assert (nodes["double"].status.value, nodes["double"].attempt) == ("COMPLETED", 1)
    assert (nodes["inner"].status.value, nodes["inner"].attempt) == ("COMPLETED", 1)


async def test_more_items_than_max_items_fail_the_loop_clearly(engine: Engine, tenant_id: str) -> None:
    outcome = await run_to_end(engine, tenant_id, loop_over([1, 2, 3], [node("body")], [], maxItems=2))
    assert outcome.run.status == "FAILED"
    assert outcome.run.error == "node 'each' failed after 1 attempt: items has 3 entries, more than maxItems (2)"
    not_a_list = await run_to_end(engine, tenant_id, loop_over("{{ ctx.input }}", [node("body")], []), {"a": 1})
    assert not_a_list.run.error == "node 'each' failed after 1 attempt: items resolved to dict, not a list"


async def test_a_failing_body_node_fails_the_run(engine: Engine, tenant_id: str) -> None:
    body = [node("fragile", config={"failTimes": 9, "retryable": False})]
    outcome = await run_to_end(engine, tenant_id, loop_over([1, 2], body, []))
    assert outcome.run.status == "FAILED"
    assert "fragile" in (outcome.run.error or "")


async def test_each_body_node_runs_once_per_iteration_with_competing_workers(
    db: Database, engine: Engine, tenant_id: str
) -> None:
    second = Engine(db, make_test_registry(), lease_seconds=2.0, poll_interval=0.01, worker_id="second")
    await second.start()
    try:
        body = [node("a"), node("b"), node("c")]
        d = loop_over(list(range(20)), body, [edge("a", "b"), edge("a", "c")], concurrency=10)
        ids = [await start(engine, tenant_id, d) for _ in range(3)]
        runs = await asyncio.gather(*(engine.wait_for_run(i, 60) for i in ids))
        assert [r.status.value for r in runs] == ["COMPLETED"] * 3
        for instance_id in ids:
            outcome = await read_outcome(engine, instance_id)
            started = [(r.node_id, r.iteration) for r in outcome.rows if r.event_type == "NODE_STARTED"]
            assert len(started) == len(set(started))  # nothing ran twice in one iteration
            assert sorted(iterations_of(outcome, "b")) == sorted(str(i) for i in range(20))
            assert outcome.run.output["result"]["count"] == 20
    finally:
        await second.stop()


def _spans(outcome: Outcome, node_id: str) -> list[tuple[float, float]]:
    starts = {
        r.iteration: r.created_at for r in outcome.rows if r.event_type == "NODE_STARTED" and r.node_id == node_id
    }
    ends = {
        r.iteration: r.created_at for r in outcome.rows if r.event_type == "NODE_COMPLETED" and r.node_id == node_id
    }
    return [(starts[k], ends[k]) for k in sorted(starts, key=int)]


async def test_partial_retry_resumes_a_loop_at_the_failed_iteration(engine: Engine, tenant_id: str) -> None:
    body = [
        node(
            "fragile",
            config={"failTimes": "{{ 1 if ctx.loop.item == 3 else 0 }}", "output": "{{ ctx.loop.item * 10 }}"},
            retry={"maxAttempts": 1},
        )
    ]
    instance_id = await start(engine, tenant_id, loop_over([1, 2, 3, 4, 5], body, [], concurrency=2))
    failed = await engine.wait_for_run(instance_id, 20)
    assert failed.status.value == "FAILED"
    before = await read_outcome(engine, instance_id)
    done_before = {r.iteration for r in before.rows if r.event_type == "NODE_COMPLETED" and r.node_id == "fragile"}
    assert "2" not in done_before
    assert await engine.retry_run(instance_id)
    run = await engine.wait_for_run(instance_id, 20)
    assert run.status.value == "COMPLETED"
    assert run.output == {"result": {"items": [10, 20, 30, 40, 50], "count": 5}}
    outcome = await read_outcome(engine, instance_id)
    starts = [
        (r.iteration, r.node_attempt) for r in outcome.rows if r.event_type == "NODE_STARTED" and r.node_id == "fragile"
    ]
    assert ("2", 1) in starts and ("2", 2) in starts  # the failed iteration ran again
    assert all(attempt == 1 for iteration, attempt in starts if iteration in done_before)  # finished ones did not
    assert sorted(iterations_of(outcome, "fragile")) == ["0", "1", "2", "3", "4"]  # each completed exactly once
    assert outcome.count("NODE_STARTED", "each") == 1  # the loop itself was not run again


async def test_an_iteration_whose_worker_died_completes_once_after_the_lease(
    db: Database, engine: Engine, tenant_id: str
) -> None:
    body = [node("slow", config={"sleep": "{{ 0.5 if ctx.loop.index == 1 else 0 }}", "output": "{{ ctx.loop.item }}"})]
    instance_id = await start(engine, tenant_id, loop_over(["a", "b", "c"], body, [], concurrency=1))
    for _ in range(250):  # wait until iteration 1 is running
        rows = await engine.state.read_log(instance_id)
        if any(r.event_type == "NODE_STARTED" and r.iteration == "1" for r in rows):
            break
        await asyncio.sleep(0.02)
    engine.worker._stopping = True  # the worker dies: no result, no lease given back
    for task in [*engine.worker._loops, *engine.worker._current]:
        task.cancel()
    run, outcome = await rescue(db, instance_id)
    assert run.status.value == "COMPLETED"
    assert run.output == {"result": {"items": ["a", "b", "c"], "count": 3}}
    assert iterations_of(outcome, "slow") == ["0", "1", "2"]  # each iteration completed exactly once


async def test_a_duplicate_result_ending_an_iteration_changes_nothing(db: Database) -> None:
    engine = Engine(db, make_test_registry(), lease_seconds=5)
    await engine.start(with_worker=False)  # no worker: the test delivers results by hand
    tenant_id = await engine.tenants.ensure("acme")
    instance_id = await start(engine, tenant_id, loop_over([1, 2, 3], [node("body")], []))
    [job] = await engine.state.claim_jobs("me", 10, 5)
    follow: Job | None = job
    for _ in range(2):  # start, then the loop's expansion: each leases the next job to "me"
        assert follow is not None
        outcome, _ = await engine.executor.run(follow)
        follow = await engine.orchestrator.handle_result(follow, outcome, claim_for="me")
    assert follow is not None and (follow.node_id, follow.iteration) == ("body", "0")
    outcome, _ = await engine.executor.run(follow)
    assert isinstance(outcome, Completed)
    following = await engine.orchestrator.handle_result(follow, outcome, claim_for="me")
    assert following is not None and (following.node_id, following.iteration) == ("body", "1")
    rows_before = await engine.state.read_log(instance_id)
    version_before = (await engine.state.get_instance(instance_id)).version  # type: ignore[union-attr]
    assert await engine.orchestrator.handle_result(follow, outcome, claim_for="me") is None
    assert await engine.state.read_log(instance_id) == rows_before
    assert (await engine.state.get_instance(instance_id)).version == version_before  # type: ignore[union-attr]
    assert await engine.state.count_jobs(instance_id) == 1  # iteration 1, once


async def test_a_duplicate_loop_expansion_changes_nothing(db: Database) -> None:
    """Found by the generated equivalence test: a loop's expansion delivered again bumped the run's
    version and charged its items to the output budget again on PostgreSQL (SQLite happened to roll back)."""
    engine = Engine(db, make_test_registry(), lease_seconds=5)
    await engine.start(with_worker=False)  # no worker: the test delivers results by hand
    try:
        tenant_id = await engine.tenants.ensure("acme")
        instance_id = await start(engine, tenant_id, loop_over([1, 2, 3], [node("body")], []))
        [job] = await engine.state.claim_jobs("me", 10, 5)
        outcome, _ = await engine.executor.run(job)
        expansion = await engine.orchestrator.handle_result(job, outcome, claim_for="me")
        assert expansion is not None and expansion.node_id == "each"
        outcome, _ = await engine.executor.run(expansion)
        assert await engine.orchestrator.handle_result(expansion, outcome, claim_for="me") is not None

        async def counters() -> tuple[int, int]:
            query = sa.select(instances.c.version, instances.c.output_bytes).where(instances.c.id == instance_id)
            async with db.read() as conn:
                version, output_bytes = (await conn.execute(query)).one()
            return version, output_bytes

        rows_before, before = await engine.state.read_log(instance_id), await counters()
        assert await engine.orchestrator.handle_result(expansion, outcome, claim_for="me") is None
        assert await engine.state.read_log(instance_id) == rows_before
        assert await counters() == before  # neither the version nor the output budget moved
    finally:
        await engine.stop()


async def test_an_iterations_first_node_sees_exactly_the_context_the_log_folds(engine: Engine, tenant_id: str) -> None:
    """The worker builds an iteration's first context from its loop's instead of reading the log: it must
    be the same fold (the input, upstream outputs, the outer and inner ``ctx.loop``), item by item."""
    d = definition(
        [
            node("start", "start"),
            node("prep", config={"output": {"factor": 3}}),
            node("outer", "loop", config={"items": "{{ ctx.input.groups }}"}),
            node("inner", "loop", config={"items": "{{ ctx.loop.item }}", "concurrency": 2}),
            node("seen", config={"output": "{{ ctx }}"}),
            end(params={"result": "{{ ctx.outer.items }}"}),
        ],
        [
            edge("start", "prep"),
            edge("prep", "outer", "success"),
            edge("outer", "inner", "loop"),
            edge("inner", "seen", "loop"),
            edge("outer", "end", "done"),
        ],
    )
    outcome = await run_to_end(engine, tenant_id, d, {"groups": [[1, 2, 3], [4]]})
    assert outcome.run.status == "COMPLETED", outcome.run.error
    seen = outcome.nodes["seen"].iterations
    assert sorted(seen) == ["0.0", "0.1", "0.2", "1.0"]
    ancestors = (await engine.plans.get(outcome.run.id)).graph.ancestors("seen")
    for iteration, view in seen.items():
        started = next(
            r.log_id
            for r in outcome.rows
            if (r.event_type, r.node_id, r.iteration) == ("NODE_STARTED", "seen", iteration)
        )
        folded = fold_context(  # what the log held when the node started: the run's rows, its ancestors' in scope
            (r.event_type, r.node_id, r.output_variable, r.payload)
            for r in outcome.rows
            if r.log_id < started
            and (
                (r.node_id is None and r.event_type == "INPUT_SET")
                or (
                    r.node_id in ancestors
                    and r.iteration in visible_scopes(iteration)
                    and r.event_type in ("SYSTEM_SET", "NODE_COMPLETED")
                )
            )
        )
        assert view.output == folded, iteration
        assert view.output["loop"]["index"] == int(iteration.split(".")[1])
