"""The notification outbox: a notice survives a restart and is sent once by several processes sweeping."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest
from aiohttp import web

from flowdeck.engine.engine import Engine
from flowdeck.notifications.notifier import Notifier
from flowdeck.outbound.addresses import OutboundPolicy
from flowdeck.queries.secrets import SecretBox
from flowdeck.storage.database import Database
from flowdeck.storage.notices import NoticeOutbox
from tests.support.graphs import definition, edge, end, node
from tests.support.handlers import make_test_registry
from tests.support.runs import start

LOCAL = OutboundPolicy.from_entries(["127.0.0.1"])


@pytest.fixture
async def receiver() -> AsyncIterator[tuple[str, list[bytes]]]:
    calls: list[bytes] = []

    async def handle(request: web.Request) -> web.Response:
        calls.append(await request.read())
        await asyncio.sleep(0.2)  # a slow receiver: the other process's sweep runs meanwhile
        return web.Response(text="ok")

    app = web.Application()
    app.router.add_post("/", handle)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    yield f"http://127.0.0.1:{port}/", calls
    await runner.cleanup()


async def test_a_notice_survives_a_restart_and_two_processes_send_it_once(
    db: Database, database_url: str, receiver: tuple[str, list[bytes]]
) -> None:
    url, calls = receiver
    engine = Engine(db, make_test_registry(), lease_seconds=2.0, poll_interval=0.05)
    await engine.start()  # no notifier: the process "stops" before sending anything
    tenant_id = await engine.tenants.ensure("acme")
    failing = definition(
        [node("start", "start"), node("bad", config={"failTimes": 9, "retryable": False}), end()],
        [edge("start", "bad"), edge("bad", "end")],
        onFailure={"url": url},
    )
    instance_id = await start(engine, tenant_id, failing)
    assert (await engine.wait_for_run(instance_id, 10)).status == "FAILED"
    await engine.stop()
    assert [n.event for n in await NoticeOutbox(db).pending(instance_id)] == ["failure"]

    # "After the restart": two processes, each with its own pool, sweep at the same moment.
    other_db = db if db.is_sqlite else Database(database_url)
    box = SecretBox("integration-test-key")
    first = Notifier(Engine(db, make_test_registry()), box, LOCAL)
    second = Notifier(Engine(other_db, make_test_registry()), box, LOCAL)
    try:
        now = engine.worker.clock()
        await asyncio.gather(first.sweep(now), second.sweep(now))
    finally:
        if other_db is not db:
            await other_db.dispose()
    assert len(calls) == 1 and instance_id.encode() in calls[0]
    assert await NoticeOutbox(db).pending(instance_id) == []
