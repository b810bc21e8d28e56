"""Node updates, and a run's updates before its end, cross processes only to a process that watches their run
(PostgreSQL LISTEN/NOTIFY, observed from a LISTEN connection of the test's own): a run nobody watches sends
only its end, a watcher that appears mid-run gets the updates from then on, and a watcher that stops is sent
nothing more."""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import AsyncIterator, Mapping
from pathlib import Path
from typing import Any

import asyncpg  # type: ignore[import-untyped]
import pytest
from sqlalchemy.engine import make_url

from flowdeck.domain.statuses import RunStatus
from flowdeck.engine.engine import Engine
from flowdeck.engine.fanout import SHARED, Fanout
from flowdeck.engine.pg_notify import PostgresTransport
from flowdeck.engine.publisher import LocalPublisher, NodeUpdate, RunUpdate, Update
from flowdeck.handlers.base import HandlerResult, NodeHelpers
from flowdeck.storage.database import Database
from tests.support.graphs import definition, edge, end, linear, node
from tests.support.handlers import StepHandler, make_test_registry
from tests.support.runs import start
from tests.support.waiting import until

HEARTBEAT = 0.2


class GateHandler(StepHandler):
    """A node that waits until the test opens its gate (and tells the test it is waiting)."""

    type_name = "gate"

    def __init__(self) -> None:
        self.entered = asyncio.Event()
        self.open = asyncio.Event()

    async def execute(
        self, config: Mapping[str, Any], context: Mapping[str, Any], helpers: NodeHelpers
    ) -> HandlerResult:
        self.entered.set()
        await self.open.wait()
        return await super().execute(config, context, helpers)


@pytest.fixture
async def sqlite_db(tmp_path: Path) -> AsyncIterator[Database]:
    db = Database(f"sqlite+aiosqlite:///{tmp_path / 'watches.db'}")
    await db.create_all()
    yield db
    await db.dispose()


class Heard:
    """A LISTEN connection of the test's own on some channels: every message, decoded, in order."""

    def __init__(self) -> None:
        self.messages: list[tuple[str, dict[str, Any]]] = []
        self.arrived = asyncio.Event()

    def __call__(self, _connection: Any, _pid: int, channel: str, payload: str) -> None:
        self.messages.append((channel, json.loads(payload)))
        self.arrived.set()

    def items(self, kind: str) -> list[tuple[str, dict[str, Any]]]:
        return [(ch, item) for ch, body in self.messages for item in body.get("updates", ()) if item["k"] == kind]

    async def until_run(self, instance_id: str, status: RunStatus) -> None:
        async with asyncio.timeout(10):
            while not any(i["i"] == instance_id and i["s"] == status.value for _, i in self.items("run")):
                self.arrived.clear()
                await self.arrived.wait()


@pytest.fixture
async def listen(postgres_url: str) -> AsyncIterator[Any]:
    u = make_url(postgres_url)
    conn = await asyncpg.connect(host=u.host, port=u.port or 5432, user=u.username, database=u.database)
    heard = Heard()

    async def on(*channels: str) -> Heard:
        for channel in channels:
            await conn.add_listener(channel, heard)
        return heard

    yield on
    await conn.close()


async def settled(*fanouts: Fanout) -> None:
    """Every fan-out is past its start-up grace and knows the others are alive (their heartbeats arrived)."""
    async with asyncio.timeout(10):
        while any(f.watches.in_grace or not f.watches.others_alive() for f in fanouts):
            await asyncio.sleep(HEARTBEAT / 4)


def fanout(postgres_url: str, channel: str, publisher: LocalPublisher) -> Fanout:
    return Fanout(PostgresTransport(postgres_url, channel=channel), publisher, heartbeat_seconds=HEARTBEAT)


async def test_a_run_nobody_watches_sends_only_its_end_to_other_processes(
    postgres_url: str, sqlite_db: Database, listen: Any
) -> None:
    channel = f"flowdeck_test_{uuid.uuid4().hex[:12]}"
    worker = Engine(sqlite_db, make_test_registry(), poll_interval=0.05)  # "flowdeck worker"
    serve = LocalPublisher()  # "flowdeck serve" with no client watching anything
    fanouts = [fanout(postgres_url, channel, worker.publisher), fanout(postgres_url, channel, serve)]
    for f in fanouts:
        await f.start()
    heard = await listen(*(f"{channel}_{topic}" for topic in (SHARED, fanouts[0].origin, fanouts[1].origin)))
    await worker.start()
    try:
        await settled(*fanouts)
        tenant_id = await worker.tenants.ensure("acme")
        instance_id = await start(worker, tenant_id, linear(3))
        await heard.until_run(instance_id, RunStatus.COMPLETED)  # sent after all its nodes' updates
        sent, received = fanouts[0].traffic, fanouts[1].traffic
        await until(lambda: received.updates_received, what="serve to hear the run's end")
    finally:
        await worker.stop()
        for f in fanouts:
            await f.stop()
    assert heard.items("node") == []
    assert [(ch, i["s"]) for ch, i in heard.items("run") if i["i"] == instance_id] == [
        (f"{channel}_{SHARED}", "COMPLETED")  # every process hears a run end: flow control, waits, plans
    ]
    # what /metrics counts (flowdeck_fanout_*) says the same: one update each way, in one message
    assert (sent.updates_sent, sent.sent["updates"]) == (1, 1)
    assert (received.updates_received, received.received["updates"]) == (1, 1)
    assert received.received["control"] > 0 and "updates" not in received.sent  # heartbeats; serve ran nothing


async def test_a_watcher_that_appears_mid_run_gets_every_update_from_then_on_and_none_after_it_stops(
    postgres_url: str, sqlite_db: Database, listen: Any
) -> None:
    channel = f"flowdeck_test_{uuid.uuid4().hex[:12]}"
    gate = GateHandler()
    registry = make_test_registry()
    registry.add(gate)
    worker = Engine(sqlite_db, registry, poll_interval=0.05)
    other = LocalPublisher()  # a second worker-like process: it watches nothing
    serve = LocalPublisher()
    fanouts = [fanout(postgres_url, channel, p) for p in (worker.publisher, other, serve)]
    for f in fanouts:
        await f.start()
    worker_fanout, other_fanout, serve_fanout = fanouts
    heard = await listen(f"{channel}_{SHARED}", f"{channel}_{other_fanout.origin}", f"{channel}_{serve_fanout.origin}")
    await worker.start()
    graph = definition(
        [node("start", "start"), node("s1"), node("g", "gate"), node("s2"), end()],
        [edge("start", "s1"), edge("s1", "g"), edge("g", "s2"), edge("s2", "end")],
    )
    try:
        await settled(*fanouts)
        tenant_id = await worker.tenants.ensure("acme")
        with worker.publisher.subscribe() as local:
            instance_id = await start(worker, tenant_id, graph)
            await asyncio.wait_for(gate.entered.wait(), 10)  # s1 is done, g runs: nobody watched any of it
            while True:  # and the worker published g's RUNNING
                u = await asyncio.wait_for(local.get(), 10)
                if isinstance(u, NodeUpdate) and (u.node_id, u.status.value) == ("g", "RUNNING"):
                    break
        with serve.subscribe(instance_id) as watched:
            await serve.watches.watch(instance_id)  # acknowledged by every other process when it returns
            assert worker_fanout.watches.targets(instance_id) == {serve_fanout.origin}
            gate.open.set()
            seen: list[Update] = []
            while not (seen and isinstance(seen[-1], RunUpdate) and seen[-1].status is RunStatus.COMPLETED):
                seen.append(await asyncio.wait_for(watched.get(), 10))
        serve.watches.unwatch(instance_id)
        async with asyncio.timeout(10):  # the worker hears the unwatch
            while worker_fanout.watches.targets(instance_id):
                await asyncio.sleep(0.01)
        second = await start(worker, tenant_id, linear(2))  # its nodes go nowhere now
        await heard.until_run(second, RunStatus.COMPLETED)
    finally:
        await worker.stop()
        for f in fanouts:
            await f.stop()
    nodes = [(u.node_id, u.status.value) for u in seen if isinstance(u, NodeUpdate)]
    assert ("g", "COMPLETED") in nodes and ("s2", "RUNNING") in nodes and ("s2", "COMPLETED") in nodes
    # Published before the watch, long before g ran: never sent (s1's completion may be published a moment
    # after g started, by an early-released decision, and then is sent: that is not asserted).
    assert ("s1", "RUNNING") not in nodes and all(node_id != "start" for node_id, _ in nodes)
    node_messages = heard.items("node")
    assert {ch for ch, _ in node_messages} == {f"{channel}_{serve_fanout.origin}"}  # never to the other process
    assert {i["i"] for _, i in node_messages} == {instance_id}  # the second run's nodes went nowhere


async def test_a_run_end_goes_to_the_processes_that_hear_run_ends_and_a_failed_one_to_all(
    postgres_url: str, sqlite_db: Database, listen: Any
) -> None:
    """Two ``flowdeck worker`` processes and a serve: the end of a run one worker completed reaches serve alone
    (on serve's own topic: the other worker's connection hears nothing of it); a failed run's end reaches every
    process, which forgets the run's cached plan."""
    channel = f"flowdeck_test_{uuid.uuid4().hex[:12]}"
    worker = Engine(sqlite_db, make_test_registry(), poll_interval=0.05)
    other_worker = LocalPublisher()
    serve = LocalPublisher()
    fanouts = [
        Fanout(PostgresTransport(postgres_url, channel=channel), publisher, heartbeat_seconds=HEARTBEAT, **options)
        for publisher, options in (
            (worker.publisher, {"hears_run_ends": False}),
            (other_worker, {"hears_run_ends": False}),
            (serve, {}),
        )
    ]
    for f in fanouts:
        await f.start()
    heard = await listen(*(f"{channel}_{topic}" for topic in (SHARED, *(f.origin for f in fanouts))))
    await worker.start()
    try:
        await settled(*fanouts)
        await until(lambda: fanouts[0].watches.end_listeners() == {fanouts[2].origin}, what="who hears run ends")
        tenant_id = await worker.tenants.ensure("acme")
        completed = await start(worker, tenant_id, linear(2))
        await heard.until_run(completed, RunStatus.COMPLETED)
        failing = linear(2)
        failing["nodes"][1]["config"] = {"failTimes": 1, "retryable": False}
        failed = await start(worker, tenant_id, failing)
        await heard.until_run(failed, RunStatus.FAILED)
        await until(lambda: fanouts[1].traffic.updates_received, what="the other worker to hear the failure")
        await until(lambda: fanouts[2].traffic.updates_received >= 2, what="serve to hear both ends")
    finally:
        await worker.stop()
        for f in fanouts:
            await f.stop()
    ends = {(i["i"], i["s"]): ch for ch, i in heard.items("run") if i["i"] in (completed, failed)}
    assert ends == {
        (completed, "COMPLETED"): f"{channel}_{fanouts[2].origin}",  # serve's topic: no worker hears it
        (failed, "FAILED"): f"{channel}_{SHARED}",  # every process: each forgets the run's plan
    }
    assert fanouts[1].traffic.updates_received == 1  # the failure only
