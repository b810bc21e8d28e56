"""``wait`` nodes in the engine (docs/waits.md): parked with no worker slot held, durable across a restart,
one token per loop iteration (each shown WAITING, CANCELLED once the run ends), a caller that waits for its
child's wait, a resume racing a timeout, and tokens deleted with their run."""

from __future__ import annotations

import asyncio
from typing import Any

import sqlalchemy as sa

from flowdeck.domain.retention import RetentionPolicy
from flowdeck.domain.statuses import NodeStatus, RunStatus
from flowdeck.engine.engine import Engine
from flowdeck.storage.database import Database
from flowdeck.storage.tables import wait_tokens
from flowdeck.storage.waits import FORM_PATH, RESUME_PATH
from tests.support.graphs import definition, edge, end, node
from tests.support.handlers import make_test_registry
from tests.support.runs import Outcome, read_outcome, start
from tests.support.waiting import until


def waiting(**config: Any) -> dict[str, Any]:
    return definition(
        [
            node("start", "start"),
            node("hold", "wait", config={"resumeOn": "webhook", **config}),
            end(params={"got": "{{ ctx.hold }}"}),
        ],
        [edge("start", "hold"), edge("hold", "end", "success")],
        timeoutSeconds=600,
    )


def token_of(url: str) -> str:
    return url.removeprefix(RESUME_PATH).removeprefix(FORM_PATH)


async def until_waiting(engine: Engine, instance_id: str, node_id: str = "hold", count: int = 1) -> list[str]:
    """Wait (for the event) until ``count`` views of the node are WAITING; their tokens."""

    async def shown() -> list[dict[str, Any]]:
        view = (await read_outcome(engine, instance_id)).nodes.get(node_id)
        views = ([view] if view and not view.iterations else list(view.iterations.values())) if view else []
        return [v.waiting_for for v in views if v.status is NodeStatus.WAITING and v.waiting_for]

    waiting = await until(shown, lambda found: len(found) >= count, what=f"{count} WAITING view(s) of {node_id}")
    return [token_of(w["url"]) for w in waiting]


async def finished(engine: Engine, instance_id: str) -> Outcome:
    await engine.wait_for_run(instance_id, 20)
    return await read_outcome(engine, instance_id)


async def test_parked_waits_hold_no_worker_slot(db: Database) -> None:
    engine = Engine(db, make_test_registry(), concurrency=1, lease_seconds=2.0, poll_interval=0.05)
    await engine.start()
    try:
        tenant_id = await engine.tenants.ensure("acme")
        parked = [await start(engine, tenant_id, waiting()) for _ in range(3)]
        tokens = [(await until_waiting(engine, run_id))[0] for run_id in parked]
        plain = definition(
            [node("start", "start"), node("work", config={"output": 7}), end(params={"v": "{{ ctx.work }}"})],
            [edge("start", "work"), edge("work", "end", "success")],
        )
        other = await finished(engine, await start(engine, tenant_id, plain))
        assert other.run.status is RunStatus.COMPLETED and other.run.output == {"v": 7}
        for n, token in enumerate(tokens):
            assert (await engine.waits.resume(token, {"body": n}))[0] == "resumed"
        for n, run_id in enumerate(parked):
            outcome = await finished(engine, run_id)
            assert outcome.run.output == {"got": {"body": n}}
            assert outcome.count("NODE_COMPLETED", "hold") == 1
    finally:
        await engine.stop()


async def test_a_wait_survives_a_restart(db: Database) -> None:
    first = Engine(db, make_test_registry(), lease_seconds=2.0, poll_interval=0.05)
    await first.start()
    tenant_id = await first.tenants.ensure("acme")
    run_id = await start(first, tenant_id, waiting())
    token = (await until_waiting(first, run_id))[0]
    await first.stop()

    second = Engine(db, make_test_registry(), lease_seconds=2.0, poll_interval=0.05)
    await second.start()
    try:
        assert (await second.waits.resume(token, {"body": "after"}))[0] == "resumed"
        outcome = await finished(second, run_id)
        assert outcome.run.status is RunStatus.COMPLETED and outcome.run.output == {"got": {"body": "after"}}
    finally:
        await second.stop()


async def test_a_wait_in_a_loop_has_one_token_per_iteration(engine: Engine, tenant_id: str) -> None:
    d = definition(
        [
            node("start", "start"),
            node("each", "loop", config={"items": ["a", "b"], "concurrency": 2}),
            node("hold", "wait", config={"resumeOn": "webhook"}),
            end(params={"result": "{{ ctx.each }}"}),
        ],
        [edge("start", "each"), edge("each", "hold", "loop"), edge("each", "end", "done")],
        timeoutSeconds=600,
    )
    run_id = await start(engine, tenant_id, d)
    tokens = await until_waiting(engine, run_id, count=2)
    assert len(set(tokens)) == 2
    for token in tokens:
        assert (await engine.waits.resume(token, {"body": token[:4]}))[0] == "resumed"
    outcome = await finished(engine, run_id)
    assert outcome.run.status is RunStatus.COMPLETED, outcome.run.error
    bodies = [view.output["body"] for view in outcome.nodes["hold"].iterations.values()]
    assert sorted(bodies) == sorted(t[:4] for t in tokens)


async def test_the_caller_waits_until_its_childs_wait_is_resumed(engine: Engine, tenant_id: str) -> None:
    child_id = (await engine.create_workflow(tenant_id, waiting())).id
    caller = definition(
        [
            node("start", "start"),
            node("call", "workflow", config={"workflowId": child_id}, timeoutSeconds=600),
            end(params={"fromChild": "{{ ctx.call.got.body }}"}),
        ],
        [edge("start", "call"), edge("call", "end", "success")],
        timeoutSeconds=600,
    )
    parent_id = await start(engine, tenant_id, caller)
    child_run = await until(lambda: _child_of(engine, parent_id), lambda found: found is not None, what="the child")
    token = (await until_waiting(engine, child_run))[0]
    parent = await read_outcome(engine, parent_id)
    assert parent.run.status is RunStatus.RUNNING and parent.status_of("call") == "RUNNING"
    assert parent.count("NODE_COMPLETED", "call") == 0

    assert (await engine.waits.resume(token, {"body": "approved"}))[0] == "resumed"
    outcome = await finished(engine, parent_id)
    assert outcome.run.status is RunStatus.COMPLETED, outcome.run.error
    assert outcome.run.output == {"fromChild": "approved"}


async def _child_of(engine: Engine, parent_id: str) -> str | None:
    view = (await read_outcome(engine, parent_id)).nodes.get("call")
    return None if view is None else view.child_instance_id


async def test_a_resume_racing_the_timeout_one_wins(engine: Engine, tenant_id: str) -> None:
    run_id = await start(engine, tenant_id, waiting())
    token = (await until_waiting(engine, run_id))[0]
    answer, timed_out = await asyncio.gather(
        engine.waits.resume(token, {"body": 1}), engine.waits.time_out(run_id, "hold", "")
    )
    assert (answer[0] == "resumed") != timed_out
    state = await engine.waits.state(run_id, "hold", "")
    assert state is not None and state.resumed != state.timed_out


async def test_a_call_before_the_run_reaches_the_wait_is_kept(engine: Engine, tenant_id: str) -> None:
    d = definition(
        [
            node("start", "start"),
            node("slow", config={"sleep": 2.0}),  # the call below comes while it sleeps
            node("hold", "wait", config={"resumeOn": "webhook"}),
            end(params={"got": "{{ ctx.hold.body }}"}),
        ],
        [edge("start", "slow"), edge("slow", "hold"), edge("hold", "end", "success")],
        timeoutSeconds=600,
    )
    run_id = await start(engine, tenant_id, d)
    rows = await engine.state.read_log(run_id)
    (urls,) = [r.payload["run"]["resumeUrls"] for r in rows if r.output_variable == "__run"]
    assert (await engine.resume_wait(token_of(urls["hold"]), {"body": "early"}))[0] == "resumed"
    outcome = await finished(engine, run_id)
    assert outcome.run.output == {"got": "early"}
    assert "hold" not in {r.node_id for r in outcome.rows if r.output_variable == "__wait"}  # it never parked


async def test_a_wait_in_a_loop_shows_waiting_per_iteration_then_cancelled(engine: Engine, tenant_id: str) -> None:
    d = definition(
        [
            node("start", "start"),
            node("each", "loop", config={"items": ["a", "b"], "concurrency": 2}),
            node("hold", "wait", config={"resumeOn": "webhook"}),
            end(params={"result": "{{ ctx.each }}"}),
        ],
        [edge("start", "each"), edge("each", "hold", "loop"), edge("each", "end", "done")],
        timeoutSeconds=600,
    )
    run_id = await start(engine, tenant_id, d)
    await until_waiting(engine, run_id, count=2)
    hold = (await read_outcome(engine, run_id)).nodes["hold"]
    assert hold.status is NodeStatus.WAITING  # the body node sums its parked iterations up
    shown = {key: view.to_json() for key, view in hold.iterations.items()}
    assert {key: (each["status"], each["loop"]["item"]) for key, each in shown.items()} == {
        "0": ("WAITING", "a"),
        "1": ("WAITING", "b"),
    }
    assert all(each["waitingFor"]["resumeOn"] == "webhook" for each in shown.values())

    assert await engine.cancel_run(run_id)
    outcome = await finished(engine, run_id)
    hold = outcome.nodes["hold"]
    assert outcome.run.status is RunStatus.CANCELLED and hold.status is NodeStatus.CANCELLED
    ended = [view.to_json() for view in hold.iterations.values()]
    assert [each["status"] for each in ended] == ["CANCELLED", "CANCELLED"]
    assert not any("waitingFor" in each for each in ended)


async def test_pruning_a_run_deletes_its_wait_tokens(engine: Engine, tenant_id: str, db: Database) -> None:
    runs = []
    for n in range(2):
        run_id = await start(engine, tenant_id, waiting())
        [token] = await until_waiting(engine, run_id)
        assert (await engine.waits.resume(token, {"body": n}))[0] == "resumed"
        assert (await finished(engine, run_id)).run.status is RunStatus.COMPLETED
        runs.append(run_id)
    assert await tokens_of(db, runs) == {runs[0]: 1, runs[1]: 1}
    await engine.pruner.store.put(tenant_id, RetentionPolicy(max_age_days=0, test_max_age_days=0, max_runs=1), 0)
    await engine.pruner.prune()
    assert await tokens_of(db, runs) == {runs[1]: 1}  # the older run went, with its token


async def tokens_of(db: Database, run_ids: list[str]) -> dict[str, int]:
    c = wait_tokens.c
    stmt = sa.select(c.instance_id, sa.func.count()).where(c.instance_id.in_(run_ids)).group_by(c.instance_id)
    async with db.read() as conn:
        return {row[0]: int(row[1]) for row in await conn.execute(stmt)}


async def test_a_partial_retry_parks_a_loop_wait_again_under_the_url_it_showed(engine: Engine, tenant_id: str) -> None:
    """The iteration's token (and so its URL) outlives the failed run: parked again by the retry, the node
    shows the URL it showed before (it showed none), and that URL resumes it."""
    d = definition(
        [
            node("start", "start"),
            node("each", "loop", config={"items": ["a"]}),
            node("hold", "wait", config={"resumeOn": "webhook"}),
            node("gate", "wait", config={"resumeOn": "webhook"}),
            node("flaky", "step", config={"failTimes": 1}, retry={"maxAttempts": 1}, errorHandling="fail_workflow"),
            end(params={"result": "{{ ctx.each }}"}),
        ],
        [
            edge("start", "each"),
            edge("each", "hold", "loop"),
            edge("each", "end", "done"),
            edge("start", "gate"),
            edge("gate", "flaky", "success"),
            edge("flaky", "end", "success"),
        ],
        timeoutSeconds=600,
    )
    run_id = await start(engine, tenant_id, d)
    [shown] = await until_waiting(engine, run_id, "hold")
    [gate] = await until_waiting(engine, run_id, "gate")
    assert (await engine.waits.resume(gate, {}))[0] == "resumed"  # flaky fails the run, hold is cancelled
    assert (await finished(engine, run_id)).run.status is RunStatus.FAILED

    assert "hold" in await engine.retry_run(run_id)
    assert await until_waiting(engine, run_id, "hold") == [shown]
    assert (await engine.waits.resume(shown, {"body": "late"}))[0] == "resumed"
    outcome = await finished(engine, run_id)
    assert outcome.run.status is RunStatus.COMPLETED, outcome.run.error
