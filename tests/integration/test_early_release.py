"""Early release on SQLite (storage/database.py): a worker goes on with a chain's next node before the
decision that leased it is durable, so several nodes share one fsync; yet nothing leaves the process
before it is durable (updates, handlers with outside effects, reads), and a group that fails to
commit is a crash for what ran on it."""

from __future__ import annotations

import asyncio
import itertools
import sqlite3
from collections.abc import AsyncIterator, Mapping
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from flowdeck.domain.statuses import NodeStatus, RunStatus
from flowdeck.engine.engine import Engine
from flowdeck.engine.publisher import NodeUpdate, Update
from flowdeck.handlers.base import HandlerResult, NodeHandler, NodeHelpers
from flowdeck.storage import database as database_module
from flowdeck.storage.database import Database
from flowdeck.storage.tables import tenants
from tests.support.graphs import definition, edge, end, linear, node
from tests.support.handlers import make_test_registry
from tests.support.runs import read_outcome, run_to_end, start


def _on_disk(path: Path, sql: str, *params: Any) -> list[tuple[Any, ...]]:
    """What another process would read: a connection of its own, committed rows only."""
    with sqlite3.connect(path) as other:
        return other.execute(sql, params).fetchall()


def _completed_on_disk(path: Path, instance_id: str, node_id: str) -> bool:
    sql = "SELECT 1 FROM instance_logs WHERE instance_id = ? AND node_id = ? AND event_type = 'NODE_COMPLETED'"
    return bool(_on_disk(path, sql, instance_id, node_id))


@pytest.fixture
def path(tmp_path: Path) -> Path:
    return tmp_path / "flowdeck.db"


async def _engine(
    path: Path, *, defer_seconds: float = 60.0, lease_seconds: float = 5.0, poll_interval: float = 0.05
) -> Engine:
    """``defer_seconds`` long: a group commits only when someone waits for it (no timer in the way)."""
    db = Database(f"sqlite+aiosqlite:///{path}", defer_seconds=defer_seconds)
    await db.create_all()
    registry = make_test_registry()
    registry.add(_OutsideEffect(path))
    registry.add(_Slow())
    return Engine(db, registry, lease_seconds=lease_seconds, poll_interval=poll_interval)


@pytest.fixture
async def engine(path: Path) -> AsyncIterator[Engine]:
    eng = await _engine(path)
    await eng.start()
    yield eng
    await eng.stop()
    await eng.db.dispose()


class _OutsideEffect(NodeHandler):
    """A node with an effect outside the engine: notes whether its predecessor's result was on disk."""

    type_name = "outside"
    handles = ("success",)

    def __init__(self, path: Path) -> None:
        self.path = path
        self.saw: list[bool] = []

    async def execute(
        self, config: Mapping[str, Any], context: Mapping[str, Any], helpers: NodeHelpers
    ) -> HandlerResult:
        self.saw.append(_completed_on_disk(self.path, helpers.instance_id, config["after"]))
        return HandlerResult(output={"sent": True}, next_handle="success")


class _Slow(NodeHandler):
    """A node with no outside effect that takes a while (its first attempt says when it has begun)."""

    type_name = "slow"
    handles = ("success",)
    confined = True

    def __init__(self) -> None:
        self.began = asyncio.Event()
        self.ran = 0

    async def execute(
        self, config: Mapping[str, Any], context: Mapping[str, Any], helpers: NodeHelpers
    ) -> HandlerResult:
        self.ran += 1
        if self.ran == 1:
            self.began.set()
            await asyncio.sleep(0.5)
        return HandlerResult(output={"slow": helpers.attempt}, next_handle="success")


async def test_a_chain_shares_its_commits_and_ends_durable(path: Path) -> None:
    # No idle claim polls (their transactions would commit too): the start job's wake-up claims it.
    engine = await _engine(path, poll_interval=60)
    await engine.start()
    try:
        tenant_id = await engine.tenants.ensure("acme")
        workflow = await engine.create_workflow(tenant_id, linear(12))
        engine.db.counter.reset()
        instance_id = await engine.start_workflow_run(tenant_id, workflow.id, None)
        run = await engine.wait_for_run(instance_id, 20)
        commits = engine.db.counter.commits
    finally:
        await engine.stop()
        await engine.db.dispose()
    assert run.status is RunStatus.COMPLETED
    # The run's start and the claim of its start node commit; then the 14 nodes' decisions share the
    # commit the chain's end asks for (each had one of its own before); a sweep may add one.
    assert commits <= 5
    assert _on_disk(path, "SELECT status FROM instances WHERE id = ?", instance_id) == [("COMPLETED",)]
    assert _completed_on_disk(path, instance_id, "end")


async def test_every_update_is_durable_when_it_is_announced(engine: Engine, path: Path) -> None:
    announced: list[tuple[str, bool]] = []
    publish = engine.publisher.publish

    def checking(updates: list[Update], **kwargs: Any) -> None:
        for update in updates:
            if isinstance(update, NodeUpdate) and update.status is NodeStatus.COMPLETED:
                on_disk = _completed_on_disk(path, update.instance_id, update.node_id)
                announced.append((update.node_id, on_disk))
        publish(updates, **kwargs)

    engine.publisher.publish = checking  # type: ignore[method-assign]
    tenant_id = await engine.tenants.ensure("acme")
    outcome = await run_to_end(engine, tenant_id, linear(8))
    assert outcome.run.status is RunStatus.COMPLETED
    assert [node_id for node_id, _ in announced] == ["start", *(f"s{i}" for i in range(1, 9)), "end"]
    assert all(on_disk for _, on_disk in announced), announced


async def test_a_node_with_outside_effects_runs_once_what_it_follows_is_durable(engine: Engine) -> None:
    handler = engine.registry.get("outside")
    assert isinstance(handler, _OutsideEffect)
    tenant_id = await engine.tenants.ensure("acme")
    nodes = [node("start", "start"), node("s1"), node("s2"), node("send", "outside", config={"after": "s2"}), end()]
    edges = [edge("start", "s1"), edge("s1", "s2"), edge("s2", "send"), edge("send", "end")]
    outcome = await run_to_end(engine, tenant_id, definition(nodes, edges))
    assert outcome.run.status is RunStatus.COMPLETED
    assert handler.saw == [True]


async def _write_early(db: Database, name: str) -> asyncio.Future[None]:
    """A write transaction released before its commit; returns the commit its writes wait for."""
    async with db.transaction(defer=True) as conn:
        await conn.execute(tenants.insert().values(id=name, name=name, created_at=0))
    assert conn.committed is not None
    return conn.committed


async def test_settling_makes_early_released_writes_durable(path: Path) -> None:
    db = Database(f"sqlite+aiosqlite:///{path}", defer_seconds=60)
    await db.create_all()
    try:
        committed = await _write_early(db, "early")
        assert not committed.done()  # released before its commit
        assert _on_disk(path, "SELECT name FROM tenants") == []
        async with db.read() as reader:  # reads see what is committed (and do not wait for more)
            assert (await reader.execute(sa.select(tenants.c.name))).scalars().all() == []
        await db.settle()
        assert committed.done()
        assert _on_disk(path, "SELECT name FROM tenants") == [("early",)]
    finally:
        await db.dispose()


async def test_a_join_reads_the_branch_whose_decision_leased_it_before_it_was_durable(engine: Engine) -> None:
    """x ends first (its decision commits: nothing follows it yet); a ends later, and its decision, still
    in the open group, leases the join to a's worker task, which reads the join's context from the log."""
    tenant_id = await engine.tenants.ensure("acme")
    nodes = [node("start", "start"), node("a", config={"sleep": 0.3}), node("x"), node("c", joinMode="all")]
    nodes.append(end(params={"a": "{{ ctx.a.node }}", "x": "{{ ctx.x.node }}"}))
    edges = [edge("start", "a"), edge("start", "x"), edge("a", "c"), edge("x", "c"), edge("c", "end")]
    outcome = await run_to_end(engine, tenant_id, definition(nodes, edges))
    assert outcome.run.status is RunStatus.COMPLETED, outcome.run.error
    assert outcome.nodes["end"].output == {"a": "a", "x": "x"}


async def test_a_group_that_fails_to_commit_is_a_crash_for_what_ran_on_it(
    path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    failed: list[int] = []

    class FailingOnce(database_module.Group):
        """The first group holding three early-released decisions fails to commit (a disk error)."""

        def commit(self) -> None:
            if self.released >= 3 and not failed:
                failed.append(self.released)
                self.raw.execute("ROLLBACK")
                raise sqlite3.OperationalError("disk I/O error")
            super().commit()

    monkeypatch.setattr(database_module, "Group", FailingOnce)
    engine = await _engine(path, lease_seconds=1.0)
    slow = engine.registry.get("slow")
    assert isinstance(slow, _Slow)
    announced: list[tuple[str, int]] = []
    publish = engine.publisher.publish

    def recording(updates: list[Update], **kwargs: Any) -> None:
        announced.extend(
            (u.node_id, u.attempt) for u in updates if isinstance(u, NodeUpdate) and u.status is NodeStatus.COMPLETED
        )
        publish(updates, **kwargs)

    engine.publisher.publish = recording  # type: ignore[method-assign]
    chain = ["start", "s1", "s2", "s3", "slow", "s4", "end"]
    nodes = [node("start", "start"), *(node(f"s{i}") for i in range(1, 5)), node("slow", "slow"), end()]
    edges = [edge(a, b) for a, b in itertools.pairwise(chain)]
    await engine.start()
    try:
        tenant_id = await engine.tenants.ensure("acme")
        instance_id = await start(engine, tenant_id, definition(nodes, edges))
        await slow.began.wait()  # running on s1-s3's decisions, still in the open group
        with pytest.raises(sqlite3.OperationalError, match="disk I/O"):
            await engine.db.settle()  # the group commits now, and fails
        run = await engine.wait_for_run(instance_id, 30)
        outcome = await read_outcome(engine, instance_id)
    finally:
        await engine.stop()
        await engine.db.dispose()
    assert failed, "no group failed: the test did not test anything"
    assert run.status is RunStatus.COMPLETED
    completed = [(r.node_id, r.node_attempt) for r in outcome.rows if r.event_type == "NODE_COMPLETED"]
    assert sorted(n for n, _ in completed) == sorted(chain)
    # The lost decisions are undone as by a crash: the start node's lease ran out and it was taken over,
    # and the chain ran again from there (the slow node twice: once on the lost decisions, stopped).
    assert outcome.nodes["start"].attempt == 2
    assert slow.ran == 2
    assert sorted(announced) == sorted(completed)  # nothing lost was ever announced


async def test_a_lone_decision_waits_at_most_the_bound(path: Path) -> None:
    db = Database(f"sqlite+aiosqlite:///{path}", defer_seconds=0.01)
    await db.create_all()
    try:
        committed = await _write_early(db, "alone")
        await asyncio.wait_for(asyncio.shield(committed), 5)  # the timer commits it, nobody asked
        assert _on_disk(path, "SELECT name FROM tenants") == [("alone",)]
    finally:
        await db.dispose()
