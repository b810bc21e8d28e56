"""The stores' one-statement steps write exactly what the portable decision writes, for hand-picked topologies.

On PostgreSQL the common decisions (a chain's step, the node ending a loop iteration, a top-level
end, a production run's start) and several write pairs are single data-modifying statements
(storage/statements_postgres.py, and the chain step in storage/chain_batches.py) that restate the
engine's rules in SQL; on SQLite a chain's step is a short fixed sequence of the portable statements
(storage/state_sqlite.py). The 27 topologies below (among them what the generated test does not draw:
pins, output budgets, scheduled starts, deadlines) run here twice on the same database of each kind, once
with those steps (``Database(url)``) and once with the portable decision alone
(``Database(url, one_statement=False)``), driven the same deterministic way: one node at a time in a
fixed order, on a fake clock. After every decision the run's log rows (less their ids), its instance
row, its jobs (less their ids), its join counters and loop counters, the job handed back to the worker
and the announcements must be the same.

Generated workflows and delivery orders (several results at once, duplicates, takeovers, batches of
several runs' chain steps, SQLite as a side) are compared in tests/integration/test_generated_equivalence.py.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
import sqlalchemy as sa

from flowdeck.domain.statuses import TERMINAL_RUN_STATUSES
from flowdeck.engine.engine import Engine
from flowdeck.engine.publisher import Update
from flowdeck.engine.run_limits import RunLimits
from flowdeck.engine.run_timing import RunTiming
from flowdeck.storage.database import Database
from flowdeck.storage.records import Job
from flowdeck.storage.tables import instance_logs, instances, join_barriers, loop_states, node_jobs
from tests.support.clock import FakeClock
from tests.support.graphs import condition_into_join, definition, diamond, edge, end, linear, node
from tests.support.handlers import make_test_registry

OWNER = "equivalence-worker"
LEASE_SECONDS = 1_000_000.0  # a lease never runs out while the driver holds it


@dataclasses.dataclass(frozen=True)
class Topology:
    name: str
    definition: dict[str, Any]
    run_input: Any = None
    pinned: dict[str, Any] | None = None
    """Pins make it a test run (started with its definition and pins, as the editor does)."""
    redeliver: bool = False
    """Deliver every result twice: the second must change nothing, on either path."""
    timing: RunTiming | None = None
    """A scheduled start and/or a deadline (``availableAt``, ``deadlineAt``) for the production run."""
    max_run_bytes: int = 64 * 1024 * 1024
    """FLOWDECK_MAX_RUN_BYTES: a small one makes a step fail at the output budget."""
    priority: int | None = None
    """The run's priority (``POST …/runs``): its jobs, the chain's next ones included, carry it."""
    started_here: bool = False
    """Started by a process whose worker has a free slot: its start node is leased to that worker in the run's
    first statement (``Orchestrator.start_taker``) instead of being claimed."""


@dataclasses.dataclass
class _StartTaker:
    """A worker with one slot for a start node: holds the job the run's first transaction leased to it."""

    id: str = OWNER
    taken: list[Job | None] = dataclasses.field(default_factory=list)

    def reserve_start(self, tenant_id: str) -> int | None:
        return -1

    def take_start(self, reservation: int, job: Job | None) -> None:
        self.taken.append(job)

    def know_start_context(self, instance_id: str, graph: Any, context: dict[str, Any]) -> None:
        pass


def _all_inputs_skipped() -> dict[str, Any]:
    return definition(
        [
            node("start", "start"),
            node("cond", "condition", config={"branches": [{"id": "yes", "expression": "false"}]}),
            node("a"),
            node("b"),
            node("join"),
            end("end_join"),
            end("end_else", {"took": "else"}),
        ],
        [
            edge("start", "cond"),
            edge("cond", "a", "yes"),
            edge("cond", "b", "yes"),
            edge("a", "join"),
            edge("b", "join"),
            edge("join", "end_join"),
            edge("cond", "end_else", "else"),
        ],
    )


def _error_edge() -> dict[str, Any]:
    return definition(
        [
            node("start", "start"),
            node("risky", config={"failTimes": 5, "retryable": False}),
            node("recover"),
            end(params={"error": "{{ ctx.risky.error.message }}"}),
        ],
        [edge("start", "risky"), edge("risky", "recover", "error"), edge("recover", "end")],
    )


def _retried() -> dict[str, Any]:
    """A node that fails once and succeeds on its retry (no backoff, so no jitter), mid-chain."""
    return definition(
        [
            node("start", "start"),
            node("flaky", config={"failTimes": 1}, retry={"maxAttempts": 2, "backoffSeconds": 0}),
            node("after"),
            end(params={"attempt": "{{ ctx.flaky.attempt }}"}),
        ],
        [edge("start", "flaky"), edge("flaky", "after"), edge("after", "end")],
    )


def _fail_workflow() -> dict[str, Any]:
    """A node failing the run while a sibling branch still has queued work."""
    return definition(
        [
            node("start", "start"),
            node("broken", config={"failTimes": 5}, retry={"maxAttempts": 1}, errorHandling="fail_workflow"),
            node("other"),
            node("later"),
            end(params={"x": 1}),
        ],
        [edge("start", "broken"), edge("start", "other"), edge("other", "later"), edge("broken", "end")],
    )


def _loop(items: Any, body: list[dict[str, Any]], body_edges: list[dict[str, Any]], **config: Any) -> dict[str, Any]:
    entry = body[0]["id"]
    return definition(
        [
            node("start", "start"),
            node("each", "loop", config={"items": items, **config}),
            *body,
            end(params={"result": "{{ ctx.each }}"}),
        ],
        [edge("start", "each"), edge("each", entry, "loop"), *body_edges, edge("each", "end", "done")],
    )


def _nested_loops() -> dict[str, Any]:
    return definition(
        [
            node("start", "start"),
            node("outer", "loop", config={"items": "{{ ctx.input.groups }}", "concurrency": 2}),
            node("inner", "loop", config={"items": "{{ ctx.loop.item }}"}),
            node("double", config={"output": "{{ ctx.loop.item * 2 }}"}),
            node("after", config={"output": "{{ ctx.double }}"}),
            end(params={"result": "{{ ctx.outer.items }}"}),
        ],
        [
            edge("start", "outer"),
            edge("outer", "inner", "loop"),
            edge("inner", "double", "loop"),
            edge("double", "after"),
            edge("outer", "end", "done"),
        ],
    )


def _end_merge() -> dict[str, Any]:
    return definition(
        [
            node("start", "start"),
            node("a", config={"output": {"v": "a"}}),
            node("b", config={"output": {"v": "b"}}),
            end("end_a", params={"who": "a", "only_a": 1}),
            end("end_b", params={"who": "b", "only_b": 2}),
        ],
        [edge("start", "a"), edge("start", "b"), edge("a", "end_a"), edge("b", "end_b")],
    )


def _delay() -> dict[str, Any]:
    return definition(
        [
            node("start", "start"),
            node("wait", "delay", config={"seconds": 30}),
            node("after"),
            end(params={"waited": "{{ ctx.wait.delayedSeconds }}"}),
        ],
        [edge("start", "wait"), edge("wait", "after"), edge("after", "end")],
    )


def _pinnable() -> dict[str, Any]:
    return definition(
        [
            node("start", "start"),
            node("fetch"),
            node("cond", "condition", config={"branches": [{"id": "yes", "expression": "true"}]}),
            node("use", config={"output": "{{ ctx.fetch }}"}),
            node("other"),
            end(params={"got": "{{ ctx.use }}"}),
            end("end_other", params={"other": 1}),
        ],
        [
            edge("start", "fetch"),
            edge("fetch", "cond"),
            edge("cond", "use", "yes"),
            edge("cond", "other", "else"),
            edge("use", "end"),
            edge("other", "end_other"),
        ],
    )


def _big_pair() -> list[dict[str, Any]]:
    """A loop body whose two nodes store 300-character strings each (the second twice: it is the sink)."""
    return [node("a", config={"output": "{{ 'x' * 300 }}"}), node("b", config={"output": "{{ 'y' * 300 }}"})]


def _big_end() -> dict[str, Any]:
    return definition(
        [node("start", "start"), node("s1"), end(params={"v": "{{ 'z' * 600 }}"})],
        [edge("start", "s1"), edge("s1", "end")],
    )


TOPOLOGIES = [
    Topology("linear", linear(4), {"order": 7}),
    Topology("linear, every result delivered twice", linear(3), redeliver=True),
    Topology("diamond all", diamond(3, "all")),
    Topology("diamond any", diamond(2, "any")),
    Topology("condition skip (else)", condition_into_join(), {"n": 1}),
    Topology("condition skip (big)", condition_into_join(), {"n": 50}),
    Topology("a join whose every input is skipped", _all_inputs_skipped()),
    Topology("error edge", _error_edge()),
    Topology("retry, then success", _retried()),
    Topology("fail_workflow", _fail_workflow()),
    Topology("loop", _loop([1, 2, 3], [node("times", config={"output": "{{ ctx.loop.item * 10 }}"})], [])),
    Topology(
        "loop with a chain body, concurrency 2",
        _loop([1, 2, 3, 4], [node("a"), node("b")], [edge("a", "b")], concurrency=2),
        redeliver=True,
    ),
    Topology("empty loop", _loop([], [node("never")], [])),
    Topology("nested loops", _nested_loops(), {"groups": [[1, 2], [3], []]}),
    Topology("end-output merge", _end_merge()),
    Topology("delay", _delay()),
    Topology("a chain at priority 73 (its next jobs keep it)", linear(3), priority=73),
    Topology("a run started where its start node is taken at once", linear(3), {"n": 1}, started_here=True),
    Topology(
        "a run started where its start node is taken, with a deadline",
        diamond(2, "all"),
        timing=RunTiming(deadline_at=FakeClock().now + 600),
        started_here=True,
    ),
    Topology(
        "a loop with a chain body at priority 1",
        _loop([1, 2, 3], [node("a"), node("b")], [edge("a", "b")], concurrency=2),
        priority=1,
    ),
    Topology("a diamond at priority 100", diamond(3, "all"), priority=100),
    Topology("a deadline before the timeout", linear(2), timing=RunTiming(deadline_at=FakeClock().now + 600)),
    Topology(
        "a scheduled start with a deadline",
        linear(2),
        timing=RunTiming(available_at=FakeClock().now + 30, deadline_at=FakeClock().now + 600),
    ),
    Topology(
        "a chain step past the output budget (in a loop)",
        _loop([1, 2, 3, 4, 5, 6], _big_pair(), [edge("a", "b")], concurrency=2),
        max_run_bytes=2_000,
    ),
    Topology(
        "an iteration step past the output budget",
        _loop([1, 2, 3, 4, 5, 6], _big_pair(), [edge("a", "b")], concurrency=2),
        max_run_bytes=2_200,
    ),
    Topology("an end step past the output budget", _big_end(), max_run_bytes=1_000),
    Topology("pins (a test run)", _pinnable(), pinned={"fetch": {"rows": [1, 2]}, "cond": {"branch": "else"}}),
]


@dataclasses.dataclass
class Trace:
    steps: list[dict[str, Any]] = dataclasses.field(default_factory=list)


async def _snapshot(db: Database, instance_id: str) -> dict[str, Any]:
    """What the run looks like in the database, less generated ids (log rows keep their log order)."""
    log_columns = _less(instance_logs, "log_id", "instance_id")
    job_columns = _less(node_jobs, "id", "instance_id")
    instance_columns = _less(instances, "id", "workflow_id", "tenant_id")
    async with db.read() as conn:
        log = (
            await conn.execute(
                sa.select(*log_columns)
                .where(instance_logs.c.instance_id == instance_id)
                .order_by(instance_logs.c.log_id)
            )
        ).all()
        instance = (await conn.execute(sa.select(*instance_columns).where(instances.c.id == instance_id))).one()
        jobs = (await conn.execute(sa.select(*job_columns).where(node_jobs.c.instance_id == instance_id))).all()
        barriers = (
            await conn.execute(
                sa.select(*_less(join_barriers, "instance_id")).where(join_barriers.c.instance_id == instance_id)
            )
        ).all()
        loops = (
            await conn.execute(
                sa.select(*_less(loop_states, "instance_id")).where(loop_states.c.instance_id == instance_id)
            )
        ).all()
    return {
        "log": [tuple(row) for row in log],
        "instance": dict(instance._mapping),
        "jobs": sorted(tuple(row) for row in jobs),
        "join_counters": sorted(tuple(row) for row in barriers),
        "loop_counters": sorted(tuple(row) for row in loops),
    }


def _less(table: sa.Table, *left_out: str) -> list[sa.Column[Any]]:
    return [c for c in table.c if c.name not in left_out]


def _job_key(job: Job | None) -> tuple[str, str, int] | None:
    return None if job is None else (job.node_id, job.iteration, job.attempt)


def _announced(updates: list[Update]) -> list[dict[str, Any]]:
    return [{k: v for k, v in dataclasses.asdict(u).items() if k != "instance_id"} for u in updates]


async def _run(url: str, topology: Topology, *, one_statement: bool) -> Trace:
    """Drive one run to its end, one node at a time in a fixed order, recording every step."""
    clock = FakeClock()
    db = Database(url, one_statement=one_statement)
    if db.is_sqlite:
        await db.create_all()
    limits = RunLimits(max_run_bytes=topology.max_run_bytes)
    engine = Engine(db, make_test_registry(), lease_seconds=LEASE_SECONDS, clock=clock, limits=limits)
    trace = Trace()
    try:
        tenant_id = await engine.tenants.ensure("equivalence")
        with engine.publisher.subscribe() as updates:

            def drain() -> list[Update]:
                taken: list[Update] = []
                while not updates.queue.empty():
                    taken.append(updates.queue.get_nowait())
                return taken

            async def record(step: str, follow: Job | None = None) -> None:
                state = await _snapshot(db, instance_id)
                trace.steps.append(
                    {"step": step, "follow": _job_key(follow), "announced": _announced(drain()), **state}
                )

            taker = _StartTaker()
            if topology.started_here:
                engine.orchestrator.start_taker = taker
            if topology.pinned is None:
                workflow = await engine.create_workflow(tenant_id, topology.definition)
                instance_id = await engine.start_workflow_run(
                    tenant_id, workflow.id, topology.run_input, timing=topology.timing, priority=topology.priority
                )
            else:
                instance_id = await engine.start_test_run(
                    tenant_id, topology.definition, topology.run_input, pinned=topology.pinned
                )
            pending: list[Job] = [job for job in taker.taken if job is not None]
            await record("start", pending[0] if pending else None)
            if topology.started_here:
                assert pending, f"{topology.name}: the start node was not leased to the worker that started the run"
            for _ in range(500):
                if not pending:
                    clock.now += 1.0
                    pending = sorted(
                        await engine.state.claim_jobs(OWNER, 100, LEASE_SECONDS),
                        key=lambda j: (j.available_at, j.iteration, j.node_id, j.attempt),
                    )
                    if pending:
                        await record("claim")
                    else:
                        due = await _next_due(db, instance_id)
                        if due is None:
                            break
                        clock.now = max(clock.now, due)
                        continue
                job = pending.pop(0)
                outcome, _ = await engine.executor.run(job)
                clock.now += 1.0
                follow = await engine.orchestrator.handle_result(job, outcome, claim_for=OWNER)
                await record(f"result of {job.node_id}[{job.iteration}]#{job.attempt}", follow)
                if topology.redeliver:
                    again = await engine.orchestrator.handle_result(job, outcome, claim_for=OWNER)
                    await record(f"duplicate of {job.node_id}[{job.iteration}]#{job.attempt}", again)
                if follow is not None:
                    pending.insert(0, follow)
            else:
                pytest.fail(f"{topology.name}: the run did not end within 500 steps")
            run = await engine.state.get_instance(instance_id)
            assert run is not None and run.status in TERMINAL_RUN_STATUSES, f"{topology.name}: {run}"
    finally:
        await engine.stop()  # its chain-step batch in flight ends before the pool closes
        await db.dispose()
    return trace


async def _next_due(db: Database, instance_id: str) -> float | None:
    async with db.read() as conn:
        due = (
            await conn.execute(
                sa.select(sa.func.min(node_jobs.c.available_at)).where(node_jobs.c.instance_id == instance_id)
            )
        ).scalar_one_or_none()
    return None if due is None else float(due)


def _first_difference(a: Trace, b: Trace) -> str:
    for index, (x, y) in enumerate(zip(a.steps, b.steps, strict=False)):
        if x != y:
            keys = [k for k in x if x[k] != y.get(k)]
            detail = "\n".join(f"  {k}:\n    one statement: {x[k]}\n    portable:      {y.get(k)}" for k in keys)
            return f"step {index} ({x['step']} / {y['step']}) differs in {keys}:\n{detail}"
    return f"one statement took {len(a.steps)} steps, portable {len(b.steps)}"


@pytest.mark.parametrize("topology", TOPOLOGIES, ids=lambda t: t.name)
async def test_the_one_statement_paths_write_what_the_portable_decision_writes(
    database_url: str, topology: Topology
) -> None:
    fast = await _run(database_url, topology, one_statement=True)
    portable = await _run(database_url, topology, one_statement=False)
    assert fast.steps == portable.steps, _first_difference(fast, portable)
    assert len(fast.steps) > 2


async def _run_with_takeover(url: str, *, one_statement: bool) -> Trace:
    """A chain whose middle node is taken over: the paused holder's late result (through the chain
    step on PostgreSQL) must write what the portable decision writes, and start nothing."""
    clock = FakeClock()
    db = Database(url, one_statement=one_statement)
    if db.is_sqlite:
        await db.create_all()
    lease = 10.0
    engine = Engine(db, make_test_registry(), lease_seconds=lease, clock=clock)
    trace = Trace()
    try:
        tenant_id = await engine.tenants.ensure("equivalence")
        workflow = await engine.create_workflow(tenant_id, linear(3))
        instance_id = await engine.start_workflow_run(tenant_id, workflow.id, {})

        async def record(step: str, follow: Job | None = None) -> None:
            trace.steps.append({"step": step, "follow": _job_key(follow), **await _snapshot(db, instance_id)})

        clock.advance(1)
        [first] = await engine.state.claim_jobs(OWNER, 1, lease)
        outcome, _ = await engine.executor.run(first)
        paused = await engine.orchestrator.handle_result(first, outcome, claim_for=OWNER)  # s1, leased to OWNER
        assert paused is not None
        await record("start, s1 leased", paused)
        clock.advance(lease + 1)
        [taken] = await engine.state.claim_jobs("rescuer", 1, lease)
        await record("taken over", taken)
        stale, _ = await engine.executor.run(paused)
        await record("stale result", await engine.orchestrator.handle_result(paused, stale, claim_for=OWNER))
        follow: Job | None = taken
        while follow is not None:
            clock.advance(1)
            outcome, _ = await engine.executor.run(follow)
            follow = await engine.orchestrator.handle_result(follow, outcome, claim_for="rescuer")
            await record("result", follow)
    finally:
        await db.dispose()
    return trace


async def test_a_stale_holders_result_after_a_takeover_is_the_same_on_both_paths(database_url: str) -> None:
    fast = await _run_with_takeover(database_url, one_statement=True)
    portable = await _run_with_takeover(database_url, one_statement=False)
    assert fast.steps == portable.steps, _first_difference(fast, portable)
    stale = next(s for s in fast.steps if s["step"] == "stale result")
    assert stale["follow"] is None and not any(row[0] == "s2" for row in stale["log"])  # it started nothing
