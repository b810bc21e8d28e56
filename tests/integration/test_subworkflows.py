"""Sub-workflows (SPEC §2 ``workflow``): a node runs another saved workflow as a child run and waits for
it without holding a worker slot; the child's end completes the node exactly once."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from flowdeck.domain.statuses import NodeStatus, RunStatus
from flowdeck.engine.engine import Engine
from flowdeck.storage.children import MAX_DEPTH
from flowdeck.storage.database import Database
from flowdeck.storage.tables import node_jobs
from tests.support.clock import FakeClock
from tests.support.graphs import definition, edge, end, node
from tests.support.handlers import make_test_registry
from tests.support.runs import Outcome, read_outcome, rescue

ROOT = Path(__file__).resolve().parents[2]


def child_definition(*, sleep: float = 0, fail: bool = False, title: str = "child") -> dict[str, Any]:
    """start -> work -> end: doubles ``ctx.input.x``; ``fail``: the work node fails (no retry)."""
    work_config: dict[str, Any] = {"output": {"doubled": "{{ ctx.input.x * 2 }}"}, "sleep": sleep}
    if fail:
        work_config |= {"failTimes": 5, "retryable": False}
    d = definition(
        [node("start", "start"), node("work", config=work_config), end(params={"doubled": "{{ ctx.work.doubled }}"})],
        [edge("start", "work"), edge("work", "end", "success")],
    )
    d["title"] = title
    return d


def caller_definition(child_id: str, *, error_edge: bool = False, **call_fields: Any) -> dict[str, Any]:
    """start -> call (workflow node) -> end, and with ``error_edge`` call -error-> failed (an end)."""
    nodes = [
        node("start", "start"),
        node("call", "workflow", config={"workflowId": child_id, "input": {"x": "{{ ctx.input.x }}"}}, **call_fields),
        end(params={"result": "{{ ctx.call }}"}),
    ]
    edges = [edge("start", "call"), edge("call", "end", "success")]
    if error_edge:
        nodes.append(end("failed", params={"error": "{{ ctx.call.error }}"}))
        edges.append(edge("call", "failed", "error"))
    return definition(nodes, edges)


async def run(engine: Engine, tenant_id: str, workflow_id: str, run_input: Any, timeout: float = 20) -> Outcome:
    instance_id = await engine.start_workflow_run(tenant_id, workflow_id, run_input)
    await engine.wait_for_run(instance_id, timeout)
    return await read_outcome(engine, instance_id)


async def save(engine: Engine, tenant_id: str, d: dict[str, Any]) -> str:
    return (await engine.create_workflow(tenant_id, d)).id


async def test_the_parent_gets_the_childs_output(engine: Engine, tenant_id: str) -> None:
    child_id = await save(engine, tenant_id, child_definition())
    parent_id = await save(engine, tenant_id, caller_definition(child_id))

    outcome = await run(engine, tenant_id, parent_id, {"x": 21})

    assert outcome.run.status is RunStatus.COMPLETED, outcome.run.error
    assert outcome.run.output == {"result": {"doubled": 42}}
    child_run_id = outcome.nodes["call"].child_instance_id
    assert child_run_id is not None
    child = await engine.state.get_instance(child_run_id)
    assert child is not None
    assert child.status is RunStatus.COMPLETED
    assert (child.trigger, child.workflow_id, child.input, child.is_test) == ("workflow", child_id, {"x": 21}, False)
    assert (child.parent_instance_id, child.parent_node_id, child.depth) == (outcome.run.id, "call", 1)
    assert outcome.count("NODE_COMPLETED", "call") == 1
    assert "__call" not in str(outcome.run.output)  # the call's record never reaches a context


async def wait_for(predicate: Any, what: str, timeout: float = 15) -> Any:
    """Poll ``predicate`` (an async callable) until it gives something truthy."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = await predicate()
        if value:
            return value
        await asyncio.sleep(0.02)
    raise AssertionError(f"timed out waiting for {what}")


async def child_of(engine: Engine, instance_id: str, node_id: str = "call") -> str:
    async def called() -> str | None:
        view = (await read_outcome(engine, instance_id)).nodes.get(node_id)
        return None if view is None else view.child_instance_id

    return str(await wait_for(called, f"{node_id} of {instance_id} to call a child"))


async def test_a_failed_child_takes_the_error_edge_with_its_id(engine: Engine, tenant_id: str) -> None:
    child_id = await save(engine, tenant_id, child_definition(fail=True))
    parent_id = await save(engine, tenant_id, caller_definition(child_id, error_edge=True))

    outcome = await run(engine, tenant_id, parent_id, {"x": 1})

    assert outcome.run.status is RunStatus.COMPLETED
    child_run_id = outcome.nodes["call"].child_instance_id
    error = outcome.run.output["error"]
    assert error["type"] == "ChildRunFailed"
    assert error["instanceId"] == child_run_id
    assert error["message"].startswith(f"child run {child_run_id} failed: node 'work' failed after 1 attempt")
    assert outcome.count("NODE_FAILED", "call") == 1  # the child failed for good: no retry calls it again
    assert outcome.status_of("end") == "SKIPPED"


async def test_a_failed_child_fails_a_caller_without_an_error_edge(engine: Engine, tenant_id: str) -> None:
    child_id = await save(engine, tenant_id, child_definition(fail=True))
    parent_id = await save(engine, tenant_id, caller_definition(child_id))

    outcome = await run(engine, tenant_id, parent_id, {"x": 1})

    assert outcome.run.status is RunStatus.FAILED
    assert outcome.run.error is not None and "node 'call' failed after 1 attempt: child run" in outcome.run.error


async def test_a_cancelled_child_completes_the_node_on_error(engine: Engine, tenant_id: str) -> None:
    child_id = await save(engine, tenant_id, child_definition(sleep=30))
    parent_id = await save(engine, tenant_id, caller_definition(child_id, error_edge=True))
    instance_id = await engine.start_workflow_run(tenant_id, parent_id, {"x": 1})

    child_run_id = await child_of(engine, instance_id)
    assert await engine.cancel_run(child_run_id)
    parent = await engine.wait_for_run(instance_id, 15)

    assert parent.status is RunStatus.COMPLETED
    assert parent.output["error"]["type"] == "ChildRunCancelled"
    assert parent.output["error"]["instanceId"] == child_run_id


async def test_cancelling_the_parent_cancels_its_child(engine: Engine, tenant_id: str) -> None:
    child_id = await save(engine, tenant_id, child_definition(sleep=30))
    parent_id = await save(engine, tenant_id, caller_definition(child_id))
    instance_id = await engine.start_workflow_run(tenant_id, parent_id, {"x": 1})
    child_run_id = await child_of(engine, instance_id)

    async def child_working() -> bool:
        work = (await read_outcome(engine, child_run_id)).nodes.get("work")
        return work is not None and work.status is NodeStatus.RUNNING

    await wait_for(child_working, "the child's node to run")
    assert await engine.cancel_run(instance_id)
    child = await engine.wait_for_run(child_run_id, 15)

    assert child.status is RunStatus.CANCELLED
    assert child.error is None
    rows = await engine.state.read_log(child_run_id)
    reason = [r.payload.get("reason") for r in rows if r.event_type == "RUN_STATUS"][-1]
    assert reason == f"the run that called it ({instance_id}) was cancelled"
    assert (await read_outcome(engine, child_run_id)).status_of("work") == "CANCELLED"


async def test_an_orphaned_child_is_cancelled_by_the_sweep(engine: Engine, tenant_id: str) -> None:
    """The process that ended the caller stopped before its cascade ran: any worker's sweep finds the child."""
    child_id = await save(engine, tenant_id, child_definition(sleep=30))
    parent_id = await save(engine, tenant_id, caller_definition(child_id))
    instance_id = await engine.start_workflow_run(tenant_id, parent_id, {"x": 1})
    child_run_id = await child_of(engine, instance_id)
    engine.orchestrator.end_listeners.remove(engine.cascade.run_ended)  # as if the process died after the commit

    assert await engine.cancel_run(instance_id)
    await engine.worker.sweep()

    child = await engine.wait_for_run(child_run_id, 15)
    assert child.status is RunStatus.CANCELLED


async def test_the_nodes_timeout_covers_the_child(engine: Engine, tenant_id: str) -> None:
    child_id = await save(engine, tenant_id, child_definition(sleep=30))
    parent_id = await save(
        engine, tenant_id, caller_definition(child_id, error_edge=True, timeoutSeconds=0.5, retry={"maxAttempts": 1})
    )

    outcome = await run(engine, tenant_id, parent_id, {"x": 1})

    error = outcome.run.output["error"]
    assert error["type"] == "Timeout"
    assert "did not finish within 0.5 s" in error["message"]
    child = await engine.wait_for_run(error["instanceId"], 15)
    assert child.status is RunStatus.CANCELLED


async def test_a_test_run_calls_the_saved_workflow_as_a_test_run(engine: Engine, tenant_id: str) -> None:
    child_id = await save(engine, tenant_id, child_definition())
    instance_id = await engine.start_test_run(tenant_id, caller_definition(child_id), {"x": 4})

    parent = await engine.wait_for_run(instance_id, 15)
    assert parent.status is RunStatus.COMPLETED
    assert parent.output == {"result": {"doubled": 8}}
    child_run_id = (await read_outcome(engine, instance_id)).nodes["call"].child_instance_id
    assert child_run_id is not None
    child = await engine.state.get_instance(child_run_id)
    assert child is not None
    assert (child.is_test, child.workflow_id, child.workflow_version, child.trigger) == (True, child_id, 1, "workflow")

    assert await engine.delete_test_run(instance_id)  # deleting the test run deletes the test runs it called
    assert await engine.state.get_instance(child_run_id) is None


async def test_recursion_stops_at_depth_ten(engine: Engine, tenant_id: str) -> None:
    workflow = await engine.create_workflow(tenant_id, child_definition(title="Recurse"))
    recursive = caller_definition(workflow.id)
    recursive["title"] = "Recurse"
    await engine.save_workflow(tenant_id, workflow.id, 1, recursive)

    outcome = await run(engine, tenant_id, workflow.id, {"x": 1}, timeout=60)

    assert outcome.run.status is RunStatus.FAILED
    chain, deepest = [outcome.run], outcome.run
    while (child_run_id := (await read_outcome(engine, deepest.id)).nodes["call"].child_instance_id) is not None:
        deepest = await engine.state.get_instance(child_run_id)
        assert deepest is not None
        chain.append(deepest)
    assert [r.depth for r in chain] == list(range(MAX_DEPTH + 1))
    assert {r.status for r in chain} == {RunStatus.FAILED}
    assert deepest.error == (
        "node 'call' failed after 1 attempt: nesting depth 11 is more than 10: " + " → ".join(["Recurse"] * 12)
    )
    failures = [(await read_outcome(engine, r.id)).count("NODE_FAILED", "call") for r in chain]
    assert failures == [1] * len(chain)  # the depth error is for good: no level retries its call


async def test_waiting_callers_hold_no_worker_slot(db: Database) -> None:
    """80 callers wait on children that each wait 3 s (a delay): with 16 slots, every call and every child
    waits at once, since neither a waiting caller nor a delayed child holds a slot (held slots would let at
    most 16 wait). The delays run on a clock the test moves, so however slowly a loaded machine makes the
    80 calls, no child's wait ends before all of them wait; then the clock passes the 3 s and all finish."""
    clock = FakeClock()
    engine = Engine(db, make_test_registry(), concurrency=16, lease_seconds=5.0, poll_interval=0.05, clock=clock)
    await engine.start()
    try:
        tenant_id = await engine.tenants.ensure("acme")
        child = definition(
            [node("start", "start"), node("wait", "delay", config={"seconds": 3}), end(params={"ok": True})],
            [edge("start", "wait"), edge("wait", "end")],
        )
        child_id = await save(engine, tenant_id, child)
        parent_id = await save(engine, tenant_id, caller_definition(child_id))
        ids = await asyncio.gather(*(engine.start_workflow_run(tenant_id, parent_id, {"x": i}) for i in range(80)))

        async def everything_waits() -> bool:
            """No node runs, and every call and every child waits in the queue: parked, unleased."""
            if engine.worker.active_jobs:
                return False
            waiting = sa.select(node_jobs.c.node_id, sa.func.count()).where(node_jobs.c.lease_owner.is_(None))
            async with db.read() as conn:
                counts = dict((await conn.execute(waiting.group_by(node_jobs.c.node_id))).all())
            return counts == {"call": 80, "end": 80}  # the children's ends wait behind their delays

        await wait_for(everything_waits, "all 80 calls and their children to wait, with no slot taken")
        clock.advance(3)
        runs = await asyncio.gather(*(engine.wait_for_run(i, 30) for i in ids))
        assert [r.status for r in runs] == [RunStatus.COMPLETED] * 80
        assert {r.output["result"]["ok"] for r in runs} == {True}
    finally:
        await engine.stop()


async def test_a_workflow_node_in_a_loop_calls_one_child_per_item_within_the_cap(
    engine: Engine, tenant_id: str
) -> None:
    child_id = await save(engine, tenant_id, child_definition(sleep=0.2))
    call = node("call", "workflow", config={"workflowId": child_id, "input": {"x": "{{ ctx.loop.item }}"}})
    d = definition(
        [
            node("start", "start"),
            node("each", "loop", config={"items": "{{ ctx.input.items }}", "concurrency": 2}),
            call,
            end(params={"results": "{{ ctx.each.items }}"}),
        ],
        [edge("start", "each"), edge("each", "call", "loop"), edge("each", "end", "done")],
    )
    parent_id = await save(engine, tenant_id, d)

    outcome = await run(engine, tenant_id, parent_id, {"items": [1, 2, 3, 4, 5]})

    assert outcome.run.status is RunStatus.COMPLETED, outcome.run.error
    assert outcome.run.output == {"results": [{"doubled": n * 2} for n in (1, 2, 3, 4, 5)]}
    children = [view.child_instance_id for view in outcome.nodes["call"].iterations.values()]
    assert len(set(children)) == 5
    spans = []
    for child_run_id in children:
        child = await engine.state.get_instance(child_run_id)
        assert child is not None and child.completed_at is not None
        spans.append((child.created_at, child.completed_at))
    most_at_once = max(sum(1 for s, e in spans if s <= at < e) for at, _ in spans)
    assert most_at_once <= 2


@pytest.mark.parametrize("field", ["workflowId", "input", "version"])
async def test_a_workflow_nodes_config_is_checked_on_save(engine: Engine, tenant_id: str, field: str) -> None:
    config: dict[str, Any] = {"workflowId": "some-id", "input": {}}
    config[field] = {"workflowId": "", "input": ["x"], "version": 0}[field]
    d = caller_definition("x")
    d["nodes"][1]["config"] = config
    problems = engine.validate(d)
    assert [(p.node_id, p.path) for p in problems if p.severity == "error"] == [("call", f"config.{field}")]


async def test_a_worker_killed_while_a_child_runs_changes_nothing(database_url: str, db: Database) -> None:
    """A real worker process calls the child and runs it; it dies by SIGKILL mid-child; another worker
    takes the child's node over after its lease, and the caller completes once, with one child."""
    env = {**os.environ, "FLOWDECK_DATABASE_URL": database_url, "FLOWDECK_WORKER_CONCURRENCY": "4"}
    worker = subprocess.Popen(
        [sys.executable, "-m", "tests.support.step_worker", "--lease-seconds", "1.5"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        assert worker.stdout is not None
        assert "running" in worker.stdout.readline()
        submitter = Engine(db, make_test_registry())  # starts runs, runs no worker
        await submitter.start(with_worker=False)
        tenant_id = await submitter.tenants.ensure("acme")
        child_id = await save(submitter, tenant_id, child_definition(sleep=2))
        parent_id = await save(submitter, tenant_id, caller_definition(child_id))
        instance_id = await submitter.start_workflow_run(tenant_id, parent_id, {"x": 5})
        child_run_id = await child_of(submitter, instance_id)

        async def child_working() -> bool:
            work = (await read_outcome(submitter, child_run_id)).nodes.get("work")
            return work is not None and work.status is NodeStatus.RUNNING

        await wait_for(child_working, "the child's node to run in the worker process")
        os.kill(worker.pid, signal.SIGKILL)
        worker.wait(5)
        parent, outcome = await rescue(db, instance_id, lease_seconds=1.5, timeout=30)
        assert parent.status is RunStatus.COMPLETED, parent.error
        assert parent.output == {"result": {"doubled": 10}}
        assert outcome.per_node("NODE_COMPLETED") == dict.fromkeys(["start", "call", "end"], 1)
        assert outcome.count("SYSTEM_SET", "call") == 1  # one call
        assert await submitter.children.descendants(instance_id) == [child_run_id]
        child = await read_outcome(submitter, child_run_id)
        assert (child.nodes["work"].attempt, child.nodes["work"].worker_id) == (2, "rescuer")  # taken over
    finally:
        if worker.poll() is None:
            worker.kill()
            worker.wait(5)
        if worker.stdout is not None:
            worker.stdout.close()


async def test_a_takeover_of_the_resuming_caller_adopts_its_child(db: Database) -> None:
    """The caller's job, woken by its child's end, is claimed by a worker that dies before it records
    anything: the attempt that takes it over finds the child of the attempt it replaced and calls nothing."""
    stepper = Engine(db, make_test_registry())  # no worker: this test moves the runs itself, job by job
    await stepper.start(with_worker=False)
    tenant_id = await stepper.tenants.ensure("acme")
    child_id = await save(stepper, tenant_id, child_definition())
    parent_id = await save(stepper, tenant_id, caller_definition(child_id))
    instance_id = await stepper.start_workflow_run(tenant_id, parent_id, {"x": 3})
    while True:  # run every due job, as a worker would, until the child has ended and woken its caller
        jobs = await stepper.state.claim_jobs("stepper", 10, 30)
        due_call = [j for j in jobs if j.instance_id == instance_id and j.node_id == "call" and j.attempt == 1]
        if due_call and (await read_outcome(stepper, instance_id)).nodes["call"].child_instance_id:
            break  # claimed by "stepper", which now dies holding it (a 30-second lease: shortened below)
        assert jobs, "nothing left to run before the caller woke"
        for job in jobs:
            outcome, _ = await stepper.executor.run(job)
            await stepper.orchestrator.handle_result(job, outcome)
    async with db.transaction() as conn:  # the dead worker's lease runs out now
        await conn.execute(node_jobs.update().where(node_jobs.c.id == due_call[0].id).values(available_at=0))

    parent, outcome = await rescue(db, instance_id, timeout=15)
    assert parent.status is RunStatus.COMPLETED, parent.error
    assert parent.output == {"result": {"doubled": 6}}
    assert (outcome.nodes["call"].attempt, outcome.nodes["call"].worker_id) == (2, "rescuer")
    assert outcome.count("SYSTEM_SET", "call") == 1
    assert len(await stepper.children.descendants(instance_id)) == 1


async def test_the_cascade_of_a_failed_caller_can_be_awaited(db: Database) -> None:
    """A caller failing ends its child by a task of its own; ``cascade.idle()`` returns once it has (a
    driver comparing the rows after each step, tests/support/equivalence.py, waits for it)."""
    stepper = Engine(db, make_test_registry())  # no worker: this test moves the run itself
    await stepper.start(with_worker=False)
    try:
        tenant_id = await stepper.tenants.ensure("acme")
        child_id = await save(stepper, tenant_id, child_definition())
        caller = caller_definition(child_id)
        caller["nodes"].append(
            node("broken", config={"failTimes": 1}, retry={"maxAttempts": 1}, errorHandling="fail_workflow")
        )
        caller["edges"].append(edge("start", "broken"))
        instance_id = await stepper.start_workflow_run(tenant_id, await save(stepper, tenant_id, caller), {"x": 1})
        [start_job] = await stepper.state.claim_jobs("stepper", 10, 30)
        outcome, _ = await stepper.executor.run(start_job)
        await stepper.orchestrator.handle_result(start_job, outcome)
        jobs = {j.node_id: j for j in await stepper.state.claim_jobs("stepper", 10, 30)}
        outcome, _ = await stepper.executor.run(jobs["call"])
        await stepper.orchestrator.handle_result(jobs["call"], outcome)  # the child is started
        child_run_id = await child_of(stepper, instance_id)
        outcome, _ = await stepper.executor.run(jobs["broken"])
        await stepper.orchestrator.handle_result(jobs["broken"], outcome)  # the caller fails
        await stepper.cascade.idle()
        child = await stepper.state.get_instance(child_run_id)
        assert child is not None and child.status is RunStatus.CANCELLED
        assert (await stepper.state.get_instance(instance_id)).status is RunStatus.FAILED  # type: ignore[union-attr]
    finally:
        await stepper.stop()
