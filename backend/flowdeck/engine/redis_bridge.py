"""Redis pub/sub as the fan-out transport (``FLOWDECK_REDIS_URL``), for fleets larger than one database's
LISTEN/NOTIFY comfortably serves. What travels and why: ``engine/fanout.py``. Each topic is a channel of
its own (``<channel>:<topic>``). redis-py subscribes again by itself after a lost connection; the transport
then delivers ``fanout.MISSED`` (what was sent meanwhile is gone)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Sequence
from typing import Any
from urllib.parse import urlsplit

import redis.asyncio as redis

from flowdeck.engine.fanout import MISSED
from flowdeck.engine.task_stop import cancel_and_wait

__all__ = ("CHANNEL", "RedisTransport")

CHANNEL = "flowdeck:updates"

log = logging.getLogger(__name__)


TIMEOUT_SECONDS = 5.0
"""How long a Redis command may take: a Redis that stopped answering fails the start-up with that said,
drops the live messages sent meanwhile (the fan-out says so once) and never holds up a stop."""


class RedisTransport:
    max_message_bytes: int | None = None

    def __init__(self, url: str, *, channel: str = CHANNEL, timeout: float = TIMEOUT_SECONDS) -> None:
        self.url = url
        self.channel = channel
        self.timeout = timeout
        self._client: redis.Redis | None = None
        self._pubsub: Any = None
        self._listening: asyncio.Task[None] | None = None
        self._deliver: Callable[[bytes], None] | None = None

    def channel_of(self, topic: str) -> str:
        return f"{self.channel}:{topic}"

    async def open(self, deliver: Callable[[bytes], None], topics: Sequence[str]) -> None:
        self._client = redis.from_url(self.url, socket_connect_timeout=self.timeout)
        self._pubsub = self._client.pubsub()
        try:  # fails here, at start-up, when Redis is unreachable or does not answer
            await asyncio.wait_for(self._pubsub.subscribe(*(self.channel_of(topic) for topic in topics)), self.timeout)
        except TimeoutError as exc:
            await self.close()
            raise ConnectionError(
                f"Redis at {_where(self.url)} (FLOWDECK_REDIS_URL) did not answer within {self.timeout:g} s"
            ) from exc
        self._deliver = deliver
        # Called after redis-py's own callback, which subscribes again; kept as a weak method by redis-py.
        self._pubsub.connection.register_connect_callback(self._listening_again)
        self._listening = asyncio.create_task(self._listen(self._pubsub, deliver), name="flowdeck-redis-in")

    def _listening_again(self, _connection: Any) -> None:
        if self._deliver is not None:
            self._deliver(MISSED)

    async def send(self, topic: str, message: bytes) -> None:
        assert self._client is not None
        await asyncio.wait_for(self._client.publish(self.channel_of(topic), message), self.timeout)

    async def close(self) -> None:
        if self._listening is not None:
            await cancel_and_wait([self._listening])
            self._listening = None
        pubsub, client, self._pubsub, self._client = self._pubsub, self._client, None, None
        for closing in (pubsub, client):
            if closing is not None:
                try:
                    await asyncio.wait_for(closing.aclose(), self.timeout)
                except (TimeoutError, OSError, redis.RedisError):
                    log.warning("closing the Redis connection failed; going on", exc_info=True)

    @staticmethod
    async def _listen(pubsub: Any, deliver: Callable[[bytes], None]) -> None:
        """Deliver what arrives; a lost connection is taken again (redis-py reconnects and subscribes again
        as it fails: the listening goes on, after a pause while Redis keeps refusing)."""
        failures = 0
        while True:
            try:
                async for message in pubsub.listen():
                    failures = 0
                    if message.get("type") == "message":
                        deliver(message["data"])
                return  # nothing subscribed any more (closing)
            except (redis.ConnectionError, redis.TimeoutError, OSError) as exc:
                failures += 1
                if failures == 1:
                    log.warning("the Redis subscription's connection was lost (%s); subscribing again", exc)
                await asyncio.sleep(min(0.05 * 2**failures, 2.0))


def _where(url: str) -> str:
    """host:port of a Redis URL (never its password)."""
    parsed = urlsplit(url)
    return f"{parsed.hostname}:{parsed.port or 6379}"
