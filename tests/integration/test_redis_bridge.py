"""Live updates across processes over Redis: what one process's engine runs, another's clients see."""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import redis.asyncio as redis

from flowdeck.domain.statuses import RunStatus
from flowdeck.engine.engine import Engine
from flowdeck.engine.publisher import LocalPublisher, NodeUpdate, RunUpdate
from flowdeck.engine.redis_bridge import RedisBridge
from flowdeck.storage.database import Database
from tests.support.graphs import linear
from tests.support.handlers import make_test_registry
from tests.support.runs import start

REDIS_URL = os.environ.get("FLOWDECK_TEST_REDIS_URL", "redis://127.0.0.1:6379/0")


@pytest.fixture
async def redis_url() -> str:
    client = redis.from_url(REDIS_URL)
    try:
        await client.ping()
    except (OSError, redis.RedisError) as exc:
        if os.environ.get("CI") == "true":
            pytest.fail(f"Redis is required in CI but unreachable at {REDIS_URL}: {exc}")
        pytest.skip(f"no Redis at {REDIS_URL}: {exc}")
    finally:
        await client.aclose()
    return REDIS_URL


@pytest.fixture
async def sqlite_db(tmp_path: Path) -> AsyncIterator[Database]:
    db = Database(f"sqlite+aiosqlite:///{tmp_path / 'bridge.db'}")
    await db.create_all()
    yield db
    await db.dispose()


async def test_a_process_sees_the_updates_of_nodes_another_process_ran(redis_url: str, sqlite_db: Database) -> None:
    channel = f"flowdeck:test:{os.getpid()}:{id(sqlite_db)}"
    worker = Engine(sqlite_db, make_test_registry(), poll_interval=0.05)  # "flowdeck worker"
    serve_publisher = LocalPublisher()  # "flowdeck serve": runs nothing, has the clients
    bridges = [
        RedisBridge(redis_url, worker.publisher, channel=channel),
        RedisBridge(redis_url, serve_publisher, channel=channel),
    ]
    for bridge in bridges:
        await bridge.start()
    await worker.start()
    try:
        with serve_publisher.subscribe() as watched, worker.publisher.subscribe() as local:
            tenant_id = await worker.tenants.ensure("acme")
            instance_id = await start(worker, tenant_id, linear(2))
            seen = []
            while not (seen and isinstance(seen[-1], RunUpdate) and seen[-1].status.value == "COMPLETED"):
                seen.append(await asyncio.wait_for(watched.get(), timeout=10))
            # A marker from the serve side reaches the worker's publisher through the worker's bridge,
            # which reads the channel in order: anything of its own echoed back would come before it.
            marker = RunUpdate(f"marker-{channel}", RunStatus.RUNNING, 0.0)
            serve_publisher.publish([marker])
            local_updates = []
            while (update := await asyncio.wait_for(local.get(), timeout=10)) != marker:
                local_updates.append(update)
    finally:
        await worker.stop()
        for bridge in bridges:
            await bridge.stop()
    nodes = [(u.node_id, u.status.value) for u in seen if isinstance(u, NodeUpdate)]
    assert ("s1", "RUNNING") in nodes and ("s2", "COMPLETED") in nodes
    assert nodes.index(("s1", "COMPLETED")) < nodes.index(("s2", "COMPLETED"))  # in order
    assert all(u.instance_id == instance_id for u in seen)
    assert seen == local_updates  # the same updates, and nothing came back twice to their source
