"""Live updates across processes, over Redis, over PostgreSQL LISTEN/NOTIFY and over the pipes between serve
and its worker processes (the first transport made is serve's hub, the others its children): what one process's engine
runs, another's clients see, in order, complete (large outputs too), and never echoed back; a job queued
in one process wakes another's idle worker at once."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import msgspec
import pytest

from flowdeck.domain.statuses import RunStatus
from flowdeck.engine.engine import Engine
from flowdeck.engine.fanout import SHARED, Fanout, Transport, encode_notice, read_back
from flowdeck.engine.pg_notify import PostgresTransport
from flowdeck.engine.pipe_transport import ChildPipes, ParentPipe
from flowdeck.engine.publisher import LocalPublisher, NodeUpdate, RunUpdate, SavedNotice, Update
from flowdeck.engine.redis_bridge import RedisTransport
from flowdeck.storage.database import Database
from tests.support.graphs import linear
from tests.support.handlers import make_test_registry
from tests.support.runs import start
from tests.support.waiting import until

MakeTransport = Callable[[], Transport]


@pytest.fixture(params=["redis", "postgres", "pipes"])
def make_transport(request: pytest.FixtureRequest) -> MakeTransport:
    """Transports on a channel of this test's own, so parallel test sessions never hear each other."""
    if request.param == "pipes":
        return _pipes()
    channel = f"flowdeck_test_{uuid.uuid4().hex[:12]}"
    if request.param == "redis":
        url = request.getfixturevalue("redis_url")
        return lambda: RedisTransport(url, channel=channel)
    url = request.getfixturevalue("postgres_url")
    return lambda: PostgresTransport(url, channel=channel)


def _pipes() -> MakeTransport:
    hub = ChildPipes()

    def make() -> Transport:
        nonlocal made_hub
        if not made_hub:
            made_hub = True
            return hub
        return ParentPipe(hub.pair().detach())

    made_hub = False
    return make


@pytest.fixture
async def sqlite_db(tmp_path: Path) -> AsyncIterator[Database]:
    db = Database(f"sqlite+aiosqlite:///{tmp_path / 'fanout.db'}")
    await db.create_all()
    yield db
    await db.dispose()


async def until_completed(subscription: object) -> list[Update]:
    seen: list[Update] = []
    while not (seen and isinstance(seen[-1], RunUpdate) and seen[-1].status is RunStatus.COMPLETED):
        seen.append(await asyncio.wait_for(subscription.get(), timeout=10))  # type: ignore[attr-defined]
    return seen


async def test_a_process_sees_the_updates_of_nodes_another_process_ran(
    make_transport: MakeTransport, sqlite_db: Database
) -> None:
    worker = Engine(sqlite_db, make_test_registry(), poll_interval=0.05)  # "flowdeck worker"
    serve_publisher = LocalPublisher()  # "flowdeck serve": runs nothing, has the clients
    fanouts = [
        Fanout(make_transport(), worker.publisher),
        Fanout(make_transport(), serve_publisher, resolve=read_back(sqlite_db)),
    ]
    for fanout in fanouts:
        await fanout.start()
    await serve_publisher.watches.watch(None)  # a client of serve watches every run
    await worker.start()
    try:
        with serve_publisher.subscribe() as watched, worker.publisher.subscribe() as local:
            tenant_id = await worker.tenants.ensure("acme")
            graph = linear(2)
            big = "x" * 20_000  # over PostgreSQL's 8,000-byte NOTIFY limit: it goes by reference
            graph["nodes"][1]["config"] = {"output": {"text": big}}
            instance_id = await start(worker, tenant_id, graph)
            seen = await until_completed(watched)
            # Proof that nothing of the worker's own came back to it: a marker sent the other way
            # arrives after anything echoed would have (one channel delivers in order).
            marker = RunUpdate("marker", RunStatus.COMPLETED, 0.0)  # a run end: every process hears it
            serve_publisher.publish([marker])
            local_updates = []
            while (update := await asyncio.wait_for(local.get(), timeout=10)) != marker:
                local_updates.append(update)
    finally:
        await worker.stop()
        for fanout in fanouts:
            await fanout.stop()
    nodes = [(u.node_id, u.status.value) for u in seen if isinstance(u, NodeUpdate)]
    assert ("s1", "RUNNING") in nodes and ("s2", "COMPLETED") in nodes
    assert nodes.index(("s1", "COMPLETED")) < nodes.index(("s2", "COMPLETED"))  # in order
    assert all(u.instance_id == instance_id for u in seen)
    s1 = next(u for u in seen if isinstance(u, NodeUpdate) and u.node_id == "s1" and u.status.value == "COMPLETED")
    assert s1.output == {"text": big}  # complete, however it travelled
    assert seen == local_updates  # the same updates, and nothing came back twice to their source


async def test_a_job_queued_in_one_process_wakes_an_idle_worker_in_another(
    make_transport: MakeTransport, sqlite_db: Database
) -> None:
    api = Engine(sqlite_db, make_test_registry())  # queues runs, runs no worker
    idle = Engine(sqlite_db, make_test_registry(), poll_interval=60.0)  # would find the job only in a minute
    api_fanout, worker_fanout = Fanout(make_transport(), api.publisher), Fanout(make_transport(), idle.publisher)
    api.orchestrator.job_listeners.append(api_fanout.job_queued)
    worker_fanout.wake_listeners.append(idle.worker.notify)
    for fanout in (api_fanout, worker_fanout):
        await fanout.start()
    await api.start(with_worker=False)
    try:
        tenant_id = await api.tenants.ensure("acme")
        # The first run is queued before the worker starts: its first claim takes it. After that the
        # worker waits for a wake-up (or its one-minute poll).
        first = await start(api, tenant_id, linear(1))
        await idle.start()
        assert (await idle.wait_for_run(first, 10)).status is RunStatus.COMPLETED
        instance_id = await start(api, tenant_id, linear(3))
        run = await idle.wait_for_run(instance_id, 10)
    finally:
        await idle.stop()
        await api.stop()
        for fanout in (api_fanout, worker_fanout):
            await fanout.stop()
    assert run.status is RunStatus.COMPLETED


async def test_a_process_alone_sends_no_wake_ups_and_sends_them_once_another_is_alive(
    make_transport: MakeTransport,
) -> None:
    """A NOTIFY (or Redis message) per queued job that no other process hears is wasted: a process that starts
    later claims what is due as it starts."""
    fanout = Fanout(make_transport(), LocalPublisher())
    other = make_transport()  # another process's transport, listening; it has not said it is alive yet
    due: asyncio.Queue[list[float]] = asyncio.Queue()

    def heard(message: bytes) -> None:
        body = msgspec.json.decode(message)
        if "due" in body:
            due.put_nowait(body["due"])

    await other.open(heard, [SHARED])
    await fanout.start()  # returns after its start-up grace: it knows it is alone
    try:
        fanout.job_queued(1_000.0)
        await other.send(SHARED, msgspec.json.encode({"from": "other", "alive": 1, "watch": [], "full": True}))
        await until(fanout.watches.others_alive, what="the fan-out to hear the other process")
        fanout.job_queued(2_000.0)
        # Messages arrive in the order their sender sent them: the first wake-up heard is the first one sent.
        assert await asyncio.wait_for(due.get(), 10) == [2_000.0]
    finally:
        await fanout.stop()
        await other.close()


async def test_a_revocation_reaches_the_other_process_once_and_never_comes_back(make_transport: MakeTransport) -> None:
    here, there = LocalPublisher(), LocalPublisher()
    fanouts = [Fanout(make_transport(), here), Fanout(make_transport(), there)]
    heard: dict[str, list[tuple[str, ...]]] = {"here": [], "there": []}
    last: dict[str, asyncio.Queue[tuple[str, ...]]] = {"here": asyncio.Queue(), "there": asyncio.Queue()}
    for name, publisher in (("here", here), ("there", there)):
        publisher.on_revoke(heard[name].append)
        publisher.on_revoke(last[name].put_nowait)
    for fanout in fanouts:
        await fanout.start()
    try:
        # Each revocation is sent after the previous one arrived: the channel keeps its order, so an
        # echo of an earlier one would be heard before the later one.
        here.revoke(["token:abc"])
        while await asyncio.wait_for(last["there"].get(), 5) != ("token:abc",):
            pass
        there.revoke(["session:xyz"])
        while await asyncio.wait_for(last["here"].get(), 5) != ("session:xyz",):
            pass
        here.revoke(["embed:end"])
        while await asyncio.wait_for(last["there"].get(), 5) != ("embed:end",):
            pass
    finally:
        for fanout in fanouts:
            await fanout.stop()
    # Every process heard every revocation once, its own locally: none came back to where it was made.
    assert heard["here"] == [("token:abc",), ("session:xyz",), ("embed:end",)]
    assert heard["there"] == [("token:abc",), ("session:xyz",), ("embed:end",)]


async def test_a_saved_version_is_told_once_in_every_process_and_never_comes_back(
    make_transport: MakeTransport,
) -> None:
    here, there = LocalPublisher(), LocalPublisher()
    fanouts = [Fanout(make_transport(), here), Fanout(make_transport(), there)]
    heard: dict[str, list[SavedNotice]] = {"here": [], "there": []}
    last: dict[str, asyncio.Queue[SavedNotice]] = {"here": asyncio.Queue(), "there": asyncio.Queue()}
    for name, publisher in (("here", here), ("there", there)):
        publisher.on_notice(heard[name].append)
        publisher.on_notice(last[name].put_nowait)
    first = SavedNotice("acme", "wf-1", 2, "alice@acme.test", "déjà vu: " + "é" * 490)  # the longest message
    second = SavedNotice("umbrella", "wf-2", 7)
    third = SavedNotice("acme", "wf-1", 3, "bob@acme.test", None)
    for fanout in fanouts:
        await fanout.start()
    try:
        # Each is sent after the previous one arrived: the channel keeps its order, so an echo of an
        # earlier one would be heard before the later one.
        here.notice(first)
        while await asyncio.wait_for(last["there"].get(), 5) != first:
            pass
        there.notice(second)
        while await asyncio.wait_for(last["here"].get(), 5) != second:
            pass
        here.notice(third)
        while await asyncio.wait_for(last["there"].get(), 5) != third:
            pass
    finally:
        for fanout in fanouts:
            await fanout.stop()
    # Every process heard every save once, its own locally: none came back to where it was made.
    assert heard["here"] == [first, second, third]
    assert heard["there"] == [first, second, third]


async def test_a_malformed_notice_from_the_channel_is_dropped_and_later_ones_still_arrive(
    make_transport: MakeTransport,
) -> None:
    publisher, sender = LocalPublisher(), make_transport()
    fanout = Fanout(make_transport(), publisher)
    heard: asyncio.Queue[SavedNotice] = asyncio.Queue()
    publisher.on_notice(heard.put_nowait)
    await fanout.start()
    await sender.open(lambda _: None, [SHARED])
    good = SavedNotice("acme", "wf-1", 4)
    try:
        bad = {"tenantId": "acme", "workflowId": "wf-1", "version": "four"}
        await sender.send(SHARED, msgspec.json.encode({"from": "elsewhere", "notices": [bad]}))
        await sender.send(SHARED, msgspec.json.encode({"from": "elsewhere", "notices": [encode_notice(good)]}))
        assert await asyncio.wait_for(heard.get(), 5) == good
    finally:
        await sender.close()
        await fanout.stop()
    assert heard.empty()
