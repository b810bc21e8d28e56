"""Drive one generated example (tests/support/generated_workflows.py) on one of the engine's paths and
record every row it writes after each step, with ids normalised, so two paths can be compared.

The driver plays the worker by hand on a fake clock: it claims due jobs, runs them, and delivers their
results in the order the schedule says (alone, several of one run at once, again as duplicates, late
after a takeover), resumes ``wait`` nodes, and moves the clock to the next due job when nothing else
can happen. ``copies`` runs the same example as that many runs of their own tenants in lockstep, each
step's deliveries of all copies at once: on PostgreSQL their chain steps then go to the store
together, and the batched chain-step statement takes them (storage/chain_batches.py).
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import re
import uuid
from collections.abc import Iterator
from typing import Any

import sqlalchemy as sa

from flowdeck.domain.statuses import TERMINAL_RUN_STATUSES
from flowdeck.engine import retry
from flowdeck.engine.engine import Engine
from flowdeck.engine.outcomes import Completed, Failed, NodeOutcome
from flowdeck.engine.publisher import Update
from flowdeck.storage.database import Database
from flowdeck.storage.records import Job
from flowdeck.storage.tables import instances, metadata, node_jobs, wait_tokens, workflows
from flowdeck.storage.waits import FORM_PATH, RESUME_PATH
from tests.support.clock import FakeClock
from tests.support.generated_workflows import Example
from tests.support.handlers import make_test_registry

__all__ = ("EnginePath", "Trace", "first_difference", "run_example")

OWNER = "worker"
RESCUER = "rescuer"
LEASE_SECONDS = 10_000.0
"""Longer than any delay or wait of a generated workflow: only a takeover move lets a lease run out."""
MAX_STEPS = 400
_ROW_IDS = ("id", "log_id", "token_hash")
"""Generated keys: they differ between databases and between runs of one, and are left out."""
_TOKEN = re.compile(f"({re.escape(RESUME_PATH)}|{re.escape(FORM_PATH)})[A-Za-z0-9_-]+")
_RUNS: sa.BindParameter[list[str]] = sa.bindparam("runs", expanding=True)
_TENANTS: sa.BindParameter[list[str]] = sa.bindparam("tenants", expanding=True)
_RUN_SCOPED = [
    (table, instances.c.id if table is instances else table.c.instance_id)
    for table in metadata.sorted_tables
    if table is instances or "instance_id" in table.c
]
_SNAPSHOT_QUERIES = [
    (table, key, sa.select(table).where(key.in_(_RUNS)).order_by(*[table.c.log_id] if "log_id" in table.c else []))
    for table, key in _RUN_SCOPED
]
"""Every run-scoped table's rows of some runs (built once: the statements are compiled once per database)."""
_RUNS_OF_TENANTS = sa.select(
    instances.c.id,
    instances.c.tenant_id,
    instances.c.created_at,
    instances.c.parent_node_id,
    instances.c.parent_iteration,
).where(instances.c.tenant_id.in_(_TENANTS))
_WORKFLOWS_OF_TENANTS = (
    sa.select(workflows.c.id, workflows.c.tenant_id)
    .where(workflows.c.tenant_id.in_(_TENANTS))
    .order_by(workflows.c.created_at, workflows.c.title)
)


@dataclasses.dataclass(frozen=True)
class EnginePath:
    name: str
    url: str
    one_statement: bool
    copies: int = 1


@dataclasses.dataclass
class Trace:
    steps: list[dict[str, Any]] = dataclasses.field(default_factory=list)
    chain_batch_largest: int = 0
    """The most chain steps one PostgreSQL statement took (0 on the portable path)."""


class _MidJitter:
    """Retry jitter fixed at its middle, so every path (and every copy) waits the same."""

    def uniform(self, low: float, high: float) -> float:
        return (low + high) / 2


@dataclasses.dataclass
class _Copy:
    tenant_id: str
    root: str = ""
    pending: list[Job] = dataclasses.field(default_factory=list)
    last: tuple[Job, NodeOutcome] | None = None
    names: dict[str, str] = dataclasses.field(default_factory=dict)
    """Instance, workflow and tenant ids -> stable names ("run0", "wf1", "tenant")."""
    trace: Trace = dataclasses.field(default_factory=Trace)
    updates: list[Update] = dataclasses.field(default_factory=list)


class _World:
    def __init__(self, engine: Engine, clock: FakeClock, copies: list[_Copy]) -> None:
        self.engine = engine
        self.clock = clock
        self.copies = copies
        self.by_tenant = {c.tenant_id: c for c in copies}

    async def name_ids(self) -> None:
        """Name every copy's runs and workflows in an order every path agrees on (creation, then caller)."""
        tenants = {"tenants": list(self.by_tenant)}
        async with self.engine.db.read() as conn:
            runs = (await conn.execute(_RUNS_OF_TENANTS, tenants)).all()
            flows = (await conn.execute(_WORKFLOWS_OF_TENANTS, tenants)).all()
        for copy in self.copies:
            copy.names[copy.tenant_id] = "tenant"
            mine = [row for row in flows if row.tenant_id == copy.tenant_id]
            copy.names.update({row.id: f"wf{n}" for n, row in enumerate(mine)})
            ordered = sorted(
                (r for r in runs if r.tenant_id == copy.tenant_id),
                key=lambda r: (r.created_at, str(r.parent_node_id), str(r.parent_iteration)),
            )
            for run in ordered:
                if run.id not in copy.names:
                    copy.names[run.id] = f"run{sum(1 for v in copy.names.values() if v.startswith('run'))}"

    def order(self, copy: _Copy, jobs: list[Job]) -> list[Job]:
        return sorted(jobs, key=lambda j: (copy.names.get(j.instance_id, "~"), j.iteration, j.node_id, j.attempt))

    async def claim(self, owner: str) -> bool:
        claimed = await self.engine.state.claim_jobs(owner, 10_000, LEASE_SECONDS)
        await self.name_ids()
        for copy in self.copies:
            mine = [j for j in claimed if j.tenant_id == copy.tenant_id]
            copy.pending = self.order(copy, mine) + ([] if owner == RESCUER else copy.pending)
        return bool(claimed)

    async def deliver(self, copy: _Copy, jobs: list[Job], outcomes: list[NodeOutcome]) -> list[Job | None]:
        """The results of one copy's run, decided at once when there are several (as a worker's slots deliver).

        Results the engine never batches (a call, a park, a loop's expansion: engine/orchestrator.py) go
        first, one after another in the schedule's order: they read from the database before taking the
        run's lock, so among others their turn would follow the database's timing, not the schedule. The
        rest go at once and are decided together (engine/batching.py)."""
        orchestrator = self.engine.orchestrator
        results: dict[int, Job | None] = {}
        for n, (job, outcome) in enumerate(zip(jobs, outcomes, strict=True)):
            if not _batched(outcome):
                results[n] = await orchestrator.handle_result(job, outcome, claim_for=job.lease_owner or OWNER)
        together = [n for n in range(len(jobs)) if n not in results]
        found = await asyncio.gather(
            *(
                orchestrator.handle_result(jobs[n], outcomes[n], claim_for=jobs[n].lease_owner or OWNER)
                for n in together
            )
        )
        results.update(zip(together, found, strict=True))
        return [results[n] for n in range(len(jobs))]


def _batched(outcome: NodeOutcome) -> bool:
    """Whether the engine decides this result with others of its run that arrive meanwhile."""
    return isinstance(outcome, Failed) or (isinstance(outcome, Completed) and outcome.iterations is None)


async def run_example(example: Example, path: EnginePath) -> list[Trace]:
    """Run ``example`` on ``path`` to its end; one trace per copy."""
    retry._jitter = _MidJitter()  # type: ignore[assignment]
    clock = FakeClock()
    db = Database(path.url, one_statement=path.one_statement)
    if db.is_sqlite:
        await db.create_all()
    engine = Engine(db, make_test_registry(), lease_seconds=LEASE_SECONDS, clock=clock)
    copies: list[_Copy] = []
    try:
        for _ in range(path.copies):
            copies.append(_Copy(await engine.tenants.ensure(f"equivalence-{uuid.uuid4().hex}")))
        world = _World(engine, clock, copies)
        with engine.publisher.subscribe() as updates:
            for copy in copies:
                copy.root = await _start(engine, copy, example)
            await world.name_ids()
            await _drive(world, example, updates)
        batches = getattr(engine.state, "chain_batches", None)  # PostgreSQL's one-statement store only
        for copy in copies:
            copy.trace.chain_batch_largest = 0 if batches is None else batches.largest
    finally:
        await engine.stop()
        if not db.is_sqlite:
            async with db.transaction() as conn:  # nothing of this example is claimed by the next
                tenants = [c.tenant_id for c in copies]
                await conn.execute(node_jobs.delete().where(node_jobs.c.tenant_id.in_(tenants)))
        await db.dispose()
    return [copy.trace for copy in copies]


async def _start(engine: Engine, copy: _Copy, example: Example) -> str:
    raw = example.workflow
    if example.child is not None:
        child = await engine.create_workflow(copy.tenant_id, example.child)
        raw = json.loads(json.dumps(raw).replace("{{child}}", child.id))
    workflow = await engine.create_workflow(copy.tenant_id, raw)
    return await engine.start_workflow_run(copy.tenant_id, workflow.id, example.run_input, priority=example.priority)


async def _drive(world: _World, example: Example, updates: Any) -> None:
    moves: Iterator[tuple[str, int]] = iter(example.schedule)

    async def record(step: str, follows: list[list[Job | None]] | None = None) -> None:
        await world.engine.cascade.idle()  # a failed run's children are cancelled by a task of their own
        while not updates.queue.empty():
            update = updates.queue.get_nowait()
            for copy in world.copies:
                if update.instance_id in copy.names:
                    copy.updates.append(update)
        await world.name_ids()
        snapshots = await _snapshots(world.engine.db, world.copies)
        for n, (copy, snapshot) in enumerate(zip(world.copies, snapshots, strict=True)):
            follow = None if follows is None else [_job_key(copy, j) for j in follows[n]]
            announced = _per_run([_normal(copy, dataclasses.asdict(u)) for u in copy.updates])
            copy.updates.clear()
            copy.trace.steps.append({"step": step, "follow": follow, "announced": announced, **snapshot})

    await record("start")
    lead = world.copies[0]
    for _ in range(MAX_STEPS):
        if not lead.pending:
            world.clock.advance(1)
            if await world.claim(OWNER):
                await record("claim")
                continue
            move = next(moves, ("one", 0))
            waiting = await _waiting_tokens(world, lead)
            if waiting and move[0] != "takeover":
                await _resume(world, move[1] % len(waiting))
                await record(f"resume the wait #{move[1] % len(waiting)}")
                continue
            due = await world.engine.state.next_due_time(world.clock.now)
            if due is None:
                break
            world.clock.now = max(world.clock.now, due)
            continue
        kind, n = next(moves, ("one", 0))
        if kind == "takeover":
            await _takeover(world, n, record)
            continue
        if kind == "duplicate" and lead.last is not None:
            results = await asyncio.gather(*(world.deliver(c, [c.last[0]], [c.last[1]]) for c in world.copies))  # type: ignore[index]
            await record(f"duplicate of {_label(lead.last[0])}", list(results))
            continue
        picks = [_pick(copy, n, together=kind == "together") for copy in world.copies]
        outcomes = [[(await world.engine.executor.run(job))[0] for job in jobs] for jobs in picks]
        world.clock.advance(1)
        results = await asyncio.gather(
            *(world.deliver(c, p, o) for c, p, o in zip(world.copies, picks, outcomes, strict=True))
        )
        for copy, jobs, outs, follows in zip(world.copies, picks, outcomes, results, strict=True):
            copy.last = (jobs[-1], outs[-1])
            copy.pending[:0] = [j for j in follows if j is not None]
        await record(
            f"{'together' if len(picks[0]) > 1 else 'alone'}: {', '.join(map(_label, picks[0]))}", list(results)
        )
    else:
        raise AssertionError(f"the run did not end within {MAX_STEPS} steps")
    for copy in world.copies:
        run = await world.engine.state.get_instance(copy.root)
        assert run is not None and run.status in TERMINAL_RUN_STATUSES, f"the run ended {run and run.status}"


def _pick(copy: _Copy, n: int, *, together: bool) -> list[Job]:
    """The n-th ready job alone, or it and the next ready ones of its run (2-4 in all)."""
    first = copy.pending.pop(n % len(copy.pending))
    if not together:
        return [first]
    same = [j for j in copy.pending if j.instance_id == first.instance_id][: 1 + n % 3]
    for job in same:
        copy.pending.remove(job)
    return [first, *same]


async def _takeover(world: _World, n: int, record: Any) -> None:
    """Every lease runs out; a rescuer takes the jobs over; the paused holder's result of one comes late."""
    paused = [copy.pending[n % len(copy.pending)] for copy in world.copies]
    world.clock.advance(LEASE_SECONDS + 1)
    await world.claim(RESCUER)
    await record("taken over")
    stale = [(await world.engine.executor.run(job))[0] for job in paused]
    world.clock.advance(1)
    results = await asyncio.gather(
        *(world.deliver(c, [j], [o]) for c, j, o in zip(world.copies, paused, stale, strict=True))
    )
    for copy, follows in zip(world.copies, results, strict=True):  # the holder goes on with what it was leased
        copy.pending[:0] = [j for j in follows if j is not None]
    await record(f"the paused holder's late result of {_label(paused[0])}", list(results))


async def _waiting_tokens(world: _World, copy: _Copy) -> list[tuple[str, str, str]]:
    """The copy's ``wait`` nodes parked and not yet resumed, in a stable order."""
    async with world.engine.db.read() as conn:
        rows = (
            await conn.execute(
                sa.select(wait_tokens.c.instance_id, wait_tokens.c.node_id, wait_tokens.c.iteration).where(
                    wait_tokens.c.instance_id.in_(list(copy.names)),
                    wait_tokens.c.resumed_at.is_(None),
                    wait_tokens.c.timed_out_at.is_(None),
                    wait_tokens.c.until.is_not(None),
                    sa.exists().where(  # parked still: its run has not ended
                        node_jobs.c.instance_id == wait_tokens.c.instance_id,
                        node_jobs.c.node_id == wait_tokens.c.node_id,
                        node_jobs.c.iteration == wait_tokens.c.iteration,
                    ),
                )
            )
        ).all()
    return sorted((copy.names[r.instance_id], r.node_id, r.iteration) for r in rows)


async def _resume(world: _World, index: int) -> None:
    """Resume the index-th waiting node of every copy through its token (read from the run's log, as a
    client reads it from the run's view)."""
    for copy in world.copies:
        run_name, node_id, iteration = (await _waiting_tokens(world, copy))[index]
        instance_id = next(k for k, v in copy.names.items() if v == run_name)
        rows = await world.engine.state.read_log(instance_id)
        urls = [url for r in rows if (r.node_id, r.iteration) == (node_id, iteration) for url in _urls(r.payload)]
        if not urls and not iteration:  # a top-level wait's token is made with the run (its resumeUrls)
            runs = [r.payload.get("run") for r in rows if r.node_id is None and isinstance(r.payload, dict)]
            urls = [run["resumeUrls"][node_id] for run in runs if node_id in (run or {}).get("resumeUrls", {})]
        token = urls[-1].removeprefix(RESUME_PATH)
        answer, _ = await world.engine.resume_wait(token, {"body": {"resumed": index}})
        assert answer == "resumed", answer


def _urls(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value] if value.startswith(RESUME_PATH) else []
    if isinstance(value, dict):
        return [url for v in value.values() for url in _urls(v)]
    return []


def _label(job: Job) -> str:
    return f"{job.node_id}[{job.iteration}]#{job.attempt}"


def _job_key(copy: _Copy, job: Job | None) -> tuple[str, str, str, int, str | None] | None:
    if job is None:
        return None
    return (copy.names.get(job.instance_id, "?"), job.node_id, job.iteration, job.attempt, job.lease_owner)


async def _snapshots(db: Database, copies: list[_Copy]) -> list[dict[str, Any]]:
    """Every row of every run-scoped table, per copy, ids normalised (log rows in log order)."""
    owner = {k: copy for copy in copies for k, v in copy.names.items() if v.startswith("run")}
    found: list[dict[str, Any]] = [{} for _ in copies]
    async with db.read() as conn:
        for table, key, query in _SNAPSHOT_QUERIES:
            ordered = "log_id" in table.c
            rows = (await conn.execute(query, {"runs": list(owner)})).all()
            for n, copy in enumerate(copies):
                mine = [
                    _normal(copy, {k: v for k, v in row._mapping.items() if k not in _ROW_IDS or table is instances})
                    for row in rows
                    if owner[row._mapping[key.name]] is copy
                ]
                found[n][table.name] = _per_run(mine) if ordered else sorted(mine, key=_sort_key)
    return found


def _per_run(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each run's rows in the order they came, run after run: the order between two runs' rows is not a
    rule (a failed run's children are cancelled by a task of their own while its late results arrive)."""
    return sorted(rows, key=lambda row: str(row["instance_id"]))


def _sort_key(row: Any) -> str:
    return json.dumps(row, sort_keys=True, default=str)


def _normal(copy: _Copy, value: Any) -> Any:
    if isinstance(value, str):
        for raw, name in copy.names.items():
            if raw in value:
                value = value.replace(raw, name)
        return _TOKEN.sub(r"\1<token>", value)
    if isinstance(value, dict):
        return {k: _normal(copy, v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_normal(copy, v) for v in value]
    return value


def first_difference(a: Trace, b: Trace, names: tuple[str, str]) -> str:
    for index, (x, y) in enumerate(zip(a.steps, b.steps, strict=False)):
        if x != y:
            keys = [k for k in x if x[k] != y.get(k)]
            detail = "\n".join(f"  {k}:\n    {names[0]}: {x[k]}\n    {names[1]}: {y.get(k)}" for k in keys)
            return f"step {index} ({x['step']} / {y['step']}) differs in {keys}:\n{detail}"
    return f"{names[0]} took {len(a.steps)} steps, {names[1]} {len(b.steps)}"
