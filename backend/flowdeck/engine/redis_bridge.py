"""Live updates across processes (``FLOWDECK_REDIS_URL``): the publishers of all processes, joined.

Each process forwards the updates its own engine publishes to one Redis channel, and feeds the
updates other processes sent into its local publisher (but not back out). So the Socket.IO relay
of ``flowdeck serve`` sees the nodes that ``flowdeck worker`` processes ran, and ``wait_for_run``
wakes at once wherever the run finished. Redis pub/sub keeps no history: a process that is down
misses updates, which the log still holds (clients read it through the run's snapshot).

Revocations travel the same channel as a message of their own kind (``{"from", "revoked": [keys]}``):
a token revoked through one process closes the connections that hold it in every other process.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid
from collections.abc import Callable
from typing import Any

import msgspec
import redis.asyncio as redis

from flowdeck.domain.statuses import NodeStatus, RunStatus
from flowdeck.engine.publisher import LocalPublisher, NodeUpdate, RunUpdate, Subscription, Update

_REVOCATIONS_QUEUED = 10_000

__all__ = ("RedisBridge",)

log = logging.getLogger(__name__)

CHANNEL = "flowdeck:updates"
_BATCH = 500


def _encode(update: Update) -> dict[str, Any]:
    if isinstance(update, NodeUpdate):
        return {
            "k": "node",
            "i": update.instance_id,
            "n": update.node_id,
            "it": update.iteration,
            "s": update.status.value,
            "a": update.attempt,
            "at": update.at,
            "o": update.output,
            "e": update.error,
            "p": update.pinned,
            "na": update.next_attempt_at,
        }
    return {
        "k": "run",
        "i": update.instance_id,
        "s": update.status.value,
        "at": update.at,
        "o": update.output,
        "e": update.error,
    }


def _decode(item: dict[str, Any]) -> Update:
    if item["k"] == "node":
        return NodeUpdate(
            item["i"],
            item["n"],
            item["it"],
            NodeStatus(item["s"]),
            item["a"],
            item["at"],
            output=item["o"],
            error=item["e"],
            pinned=item["p"],
            next_attempt_at=item["na"],
        )
    return RunUpdate(item["i"], RunStatus(item["s"]), item["at"], output=item["o"], error=item["e"])


class RedisBridge:
    def __init__(self, url: str, publisher: LocalPublisher, *, channel: str = CHANNEL) -> None:
        self.url = url
        self.channel = channel
        self.origin = uuid.uuid4().hex
        self._publisher = publisher
        self._client: redis.Redis | None = None
        self._outgoing: Subscription | None = None
        self._revoked: asyncio.Queue[tuple[str, ...]] = asyncio.Queue(maxsize=_REVOCATIONS_QUEUED)
        self._stop_revocations: Callable[[], None] | None = None
        self._listener = self._queue_revocation  # one object: the publisher skips it by identity
        self._tasks: list[asyncio.Task[None]] = []

    async def start(self) -> None:
        self._client = redis.from_url(self.url)
        pubsub = self._client.pubsub()
        await pubsub.subscribe(self.channel)  # fails here, at start-up, when Redis is unreachable
        self._outgoing = self._publisher.subscribe(maxsize=100_000)
        self._stop_revocations = self._publisher.on_revoke(self._listener)
        self._tasks = [
            asyncio.create_task(self._forward(self._client, self._outgoing), name="flowdeck-redis-out"),
            asyncio.create_task(self._forward_revocations(self._client), name="flowdeck-redis-revocations"),
            asyncio.create_task(self._receive(pubsub), name="flowdeck-redis-in"),
        ]

    async def stop(self) -> None:
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        self._tasks.clear()
        if self._stop_revocations is not None:
            self._stop_revocations()
            self._stop_revocations = None
        if self._outgoing is not None:
            self._outgoing.close()
        if self._client is not None:
            await self._client.aclose()

    async def _forward(self, client: redis.Redis, outgoing: Subscription) -> None:
        while True:
            batch = [await outgoing.get()]
            while len(batch) < _BATCH and not outgoing.queue.empty():
                batch.append(outgoing.queue.get_nowait())
            message = msgspec.json.encode({"from": self.origin, "updates": [_encode(u) for u in batch]})
            try:
                await client.publish(self.channel, message)
            except Exception:
                log.exception("could not forward %d live updates to Redis", len(batch))

    def _queue_revocation(self, keys: tuple[str, ...]) -> None:
        if self._revoked.full():
            log.error("revocations are not reaching Redis: %d dropped", len(keys))
            return
        self._revoked.put_nowait(keys)

    async def _forward_revocations(self, client: redis.Redis) -> None:
        while True:
            keys = list(await self._revoked.get())
            while not self._revoked.empty():
                keys.extend(self._revoked.get_nowait())
            message = msgspec.json.encode({"from": self.origin, "revoked": keys})
            try:
                await client.publish(self.channel, message)
            except Exception:
                log.exception("could not send %d revocations to Redis", len(keys))

    async def _receive(self, pubsub: Any) -> None:
        async for message in pubsub.listen():
            if message.get("type") != "message":
                continue
            with contextlib.suppress(msgspec.DecodeError, KeyError, ValueError, TypeError, AttributeError):
                body = msgspec.json.decode(message["data"])
                if body["from"] == self.origin:
                    continue
                if "revoked" in body:
                    keys = [key for key in body["revoked"] if isinstance(key, str)]
                    self._publisher.revoke(keys, skip=self._listener)
                else:
                    self._publisher.publish([_decode(item) for item in body["updates"]], relayed_from=self._outgoing)
