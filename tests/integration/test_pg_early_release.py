"""Early release on PostgreSQL (storage/pg_durability.py): a worker's decisions commit asynchronously and it
goes on at once, but nothing built on them leaves the process before a WAL flush covers them; and when
PostgreSQL restarted before that flush, what the decisions did is announced only as far as the database
shows it."""

from __future__ import annotations

import asyncio
import datetime
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from typing import Any

import pytest
import sqlalchemy as sa

from flowdeck.domain.statuses import NodeStatus, RunStatus
from flowdeck.engine.engine import Engine
from flowdeck.engine.publisher import NodeUpdate, RunUpdate, Update
from flowdeck.handlers.base import HandlerResult, NodeHandler, NodeHelpers
from flowdeck.storage.database import Database
from flowdeck.storage.pg_connection import AsyncpgConnection
from tests.support.graphs import definition, edge, end, node
from tests.support.handlers import make_test_registry
from tests.support.runs import read_outcome, start


@pytest.fixture
def database_url(postgres_url: str) -> str:
    return postgres_url


class _Hold(NodeHandler):
    """A node that runs until the test lets it end (its first attempt); it says when it has begun."""

    type_name = "hold"
    handles = ("success",)
    confined = True

    def __init__(self) -> None:
        self.began = asyncio.Event()
        self.release = asyncio.Event()
        self.attempts = 0

    async def execute(
        self, config: Mapping[str, Any], context: Mapping[str, Any], helpers: NodeHelpers
    ) -> HandlerResult:
        self.attempts += 1
        self.began.set()
        await self.release.wait()
        return HandlerResult(output={"held": helpers.attempt}, next_handle="success")


class _Flushes:
    """Stands between the database and its WAL flushes: each waits until the test opens the gate."""

    def __init__(self, db: Database, monkeypatch: pytest.MonkeyPatch) -> None:
        self.requested = asyncio.Event()
        self.gate = asyncio.Event()
        self.restarts = 0
        """How many of the next flushes answer as from a PostgreSQL that restarted since its connections
        were opened (a start time from long ago)."""
        flush: Callable[[], Awaitable[datetime.datetime]] = db._wal._flush

        async def gated() -> datetime.datetime:
            self.requested.set()
            await self.gate.wait()
            started_at = await flush()
            if self.restarts:
                self.restarts -= 1
                return datetime.datetime(2000, 1, 1, tzinfo=datetime.UTC)
            return started_at

        monkeypatch.setattr(db._wal, "_flush", gated)


@pytest.fixture
async def engine(db: Database) -> AsyncIterator[Engine]:
    registry = make_test_registry()
    registry.add(_Hold())
    eng = Engine(db, registry, lease_seconds=1.0, poll_interval=0.05)
    await eng.start()
    yield eng
    await eng.stop()


def _announced(engine: Engine) -> list[Update]:
    seen: list[Update] = []
    publish = engine.publisher.publish

    def recording(updates: list[Update], **kwargs: Any) -> None:
        seen.extend(updates)
        publish(updates, **kwargs)

    engine.publisher.publish = recording  # type: ignore[method-assign]
    return seen


def _held_chain() -> dict[str, Any]:
    nodes = [node("start", "start"), node("s1"), node("hold", "hold"), end()]
    return definition(nodes, [edge("start", "s1"), edge("s1", "hold"), edge("hold", "end")])


async def _until(condition: Callable[[], bool], timeout: float = 20.0) -> None:
    async with asyncio.timeout(timeout):
        while not condition():
            await asyncio.sleep(0.01)


async def _logged(db: Database, instance_id: str, node_id: str, event_type: str) -> bool:
    """What any other connection reads: committed rows."""
    sql = "SELECT 1 FROM instance_logs WHERE instance_id = :i AND node_id = :n AND event_type = :e"
    async with db.read(snapshot=False) as conn:
        return (await conn.execute(sa.text(sql), {"i": instance_id, "n": node_id, "e": event_type})).first() is not None


def _completed(updates: list[Update], node_id: str) -> bool:
    return any(isinstance(u, NodeUpdate) and u.node_id == node_id and u.status is NodeStatus.COMPLETED for u in updates)


async def test_a_decision_is_announced_once_a_wal_flush_covers_it(
    engine: Engine, db: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    flushes = _Flushes(db, monkeypatch)
    announced = _announced(engine)
    hold = engine.registry.get("hold")
    assert isinstance(hold, _Hold)
    instance_id = await start(engine, await engine.tenants.ensure("acme"), _held_chain())
    await hold.began.wait()  # s1's decision leased "hold" to the worker, which went on with it at once
    await flushes.requested.wait()
    assert await _logged(db, instance_id, "s1", "NODE_COMPLETED")  # committed: every connection sees it
    assert not _completed(announced, "s1")  # but not yet durable: announced to nobody
    flushes.gate.set()
    await _until(lambda: _completed(announced, "s1"))
    hold.release.set()
    await engine.wait_for_run(instance_id, 20)
    outcome = await read_outcome(engine, instance_id)
    assert outcome.run.status is RunStatus.COMPLETED
    assert any(isinstance(u, RunUpdate) and u.status is RunStatus.COMPLETED for u in announced)
    node_order = [u.node_id for u in announced if isinstance(u, NodeUpdate) and u.status is NodeStatus.COMPLETED]
    assert node_order == ["start", "s1", "hold", "end"]  # in the order they were decided


async def test_decisions_before_a_restart_are_announced_as_far_as_the_database_shows_them(
    engine: Engine, db: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    flushes = _Flushes(db, monkeypatch)
    flushes.restarts = 1
    announced = _announced(engine)
    lost: list[BaseException] = []
    db.loss_listeners.append(lost.append)
    hold = engine.registry.get("hold")
    assert isinstance(hold, _Hold)
    instance_id = await start(engine, await engine.tenants.ensure("acme"), _held_chain())
    await hold.began.wait()
    await flushes.requested.wait()
    flushes.gate.set()  # the flush answers from a PostgreSQL started after the decisions were made
    await _until(lambda: bool(lost))
    # The worker dropped what it built on them (the held node stopped); the database does show s1's
    # result, so it is announced after all, and the lease brings "hold" back to run again.
    await _until(lambda: _completed(announced, "s1"))
    await _until(lambda: hold.attempts >= 2)
    hold.release.set()
    await engine.wait_for_run(instance_id, 20)
    outcome = await read_outcome(engine, instance_id)
    assert outcome.run.status is RunStatus.COMPLETED
    assert outcome.nodes["hold"].status is NodeStatus.COMPLETED
    s1_completed = [u for u in announced if isinstance(u, NodeUpdate) and u.node_id == "s1"]
    assert [u.status for u in s1_completed].count(NodeStatus.COMPLETED) == 1


async def test_a_run_is_never_seen_ended_before_its_end_is_durable(
    engine: Engine, db: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The decision that fails the run is the worker's (early-released), but it commits synchronously: with
    the WAL flushes held back, whoever reads the run sees it FAILED only once that is durable anyway."""
    flushes = _Flushes(db, monkeypatch)  # never opened: no early-released decision becomes durable here
    durable: list[bool] = []
    commit_durably = AsyncpgConnection.commit_durably

    async def noting(conn: AsyncpgConnection) -> None:
        durable.append(True)
        await commit_durably(conn)

    monkeypatch.setattr(AsyncpgConnection, "commit_durably", noting)
    nodes = [
        node("start", "start"),
        node("s1"),
        node("boom", config={"failTimes": 1, "retryable": False}, errorHandling="fail_workflow"),
        end(),
    ]
    graph = definition(nodes, [edge("start", "s1"), edge("s1", "boom"), edge("boom", "end")])
    instance_id = await start(engine, await engine.tenants.ensure("acme"), graph)
    run = await engine.wait_for_run(instance_id, 20)
    assert run.status is RunStatus.FAILED
    assert durable == [True]
    assert not flushes.gate.is_set()
    flushes.gate.set()


async def test_a_wal_flush_flushes_the_wal_past_every_commit_before_it(db: Database) -> None:
    """The flush's synchronous commit must wait for the WAL: PostgreSQL commits a transaction that wrote no
    WAL record without that wait whatever ``synchronous_commit`` says (``SELECT pg_current_xact_id()`` did not
    flush, and announced decisions were lost in a crash). Measured on the server's WAL positions."""
    async with db.transaction(defer=True) as conn:  # an early-released decision: committed, not flushed
        await conn.execute(sa.text("SELECT 1"))
        await conn.execute(sa.text("INSERT INTO tenants (id, name, created_at) VALUES ('t-flush', 't-flush', 0)"))
    async with db.read(snapshot=False) as conn:
        written = (await conn.execute(sa.text("SELECT pg_current_wal_insert_lsn()"))).scalar_one()
    await db.flush_wal()
    async with db.read(snapshot=False) as conn:
        flushed = await conn.execute(sa.text("SELECT pg_current_wal_flush_lsn() >= :lsn"), {"lsn": written})
        assert flushed.scalar_one() is True
