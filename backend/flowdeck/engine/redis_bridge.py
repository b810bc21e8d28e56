"""Redis pub/sub as the fan-out transport (``FLOWDECK_REDIS_URL``), for fleets larger than one database's
LISTEN/NOTIFY comfortably serves. What travels and why: ``engine/fanout.py``. Each topic is a channel of
its own (``<channel>:<topic>``)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Sequence
from typing import Any

import redis.asyncio as redis

__all__ = ("CHANNEL", "RedisTransport")

CHANNEL = "flowdeck:updates"


class RedisTransport:
    max_message_bytes: int | None = None

    def __init__(self, url: str, *, channel: str = CHANNEL) -> None:
        self.url = url
        self.channel = channel
        self._client: redis.Redis | None = None
        self._pubsub: Any = None
        self._listening: asyncio.Task[None] | None = None

    def channel_of(self, topic: str) -> str:
        return f"{self.channel}:{topic}"

    async def open(self, deliver: Callable[[bytes], None], topics: Sequence[str]) -> None:
        self._client = redis.from_url(self.url)
        self._pubsub = self._client.pubsub()
        # fails here, at start-up, when Redis is unreachable
        await self._pubsub.subscribe(*(self.channel_of(topic) for topic in topics))
        self._listening = asyncio.create_task(self._listen(self._pubsub, deliver), name="flowdeck-redis-in")

    async def send(self, topic: str, message: bytes) -> None:
        assert self._client is not None
        await self._client.publish(self.channel_of(topic), message)

    async def close(self) -> None:
        if self._listening is not None:
            self._listening.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._listening
            self._listening = None
        if self._pubsub is not None:
            await self._pubsub.aclose()
            self._pubsub = None
        if self._client is not None:
            await self._client.aclose()
            self._client = None

    @staticmethod
    async def _listen(pubsub: Any, deliver: Callable[[bytes], None]) -> None:
        async for message in pubsub.listen():
            if message.get("type") == "message":
                deliver(message["data"])
