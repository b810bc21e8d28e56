"""The Redis fan-out transport outlives its subscription's connection: redis-py subscribes again by itself,
and the transport says messages sent meanwhile were missed (``MISSED``), so clients read their runs again.
Under ``CI=true`` Redis is required."""

from __future__ import annotations

import uuid

import redis.asyncio as redis

from flowdeck.engine.fanout import MISSED
from flowdeck.engine.redis_bridge import RedisTransport
from tests.support.waiting import until


async def _pubsub_clients(admin: redis.Redis) -> set[int]:
    return {int(client["id"]) for client in await admin.client_list(_type="pubsub")}


async def test_a_lost_subscription_is_taken_again_and_said_missed(redis_url: str) -> None:
    admin = redis.from_url(redis_url)
    transport = RedisTransport(redis_url, channel=f"flowdeck-test:{uuid.uuid4().hex[:12]}")
    received: list[bytes] = []
    before = await _pubsub_clients(admin)
    await transport.open(received.append, ["all"])
    try:
        [ours] = await _pubsub_clients(admin) - before
        await admin.client_kill_filter(_id=ours)
        await until(lambda: received, lambda got: MISSED in got, what="MISSED after the subscription came back")
        await transport.send("all", b"after")
        await until(lambda: received, lambda got: b"after" in got, what="a message sent after it came back")
    finally:
        await transport.close()
        await admin.aclose()
