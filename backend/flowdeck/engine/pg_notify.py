"""PostgreSQL ``LISTEN/NOTIFY`` as the fan-out transport: the default wherever processes share a
PostgreSQL database and no Redis is configured. What travels and why: ``engine/fanout.py``.

Each topic is a channel of its own (``<channel>_<topic>``), so PostgreSQL delivers a message only to the
processes that LISTEN on its topic. Two connections of their own per process (one listens, one sends),
outside the engine's pool: a listening connection must stay open, and a NOTIFY must not wait behind the
engine's transactions.
A NOTIFY payload is at most 8,000 bytes; larger updates go by reference (``max_message_bytes``).
If the listening connection drops, it is opened again and LISTENs again; messages sent meanwhile are
missed, as on Redis, and it then delivers ``fanout.MISSED``: the worker's poll finds the jobs they
announced, and the clients of this process read the runs they follow again. A send that loses its
connection is sent again on a new one.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
from collections.abc import Callable, Sequence
from typing import Any

import asyncpg  # type: ignore[import-untyped]

from flowdeck.engine.fanout import MISSED
from flowdeck.engine.task_stop import cancel_and_wait
from flowdeck.storage.disconnects import is_disconnect
from flowdeck.storage.pg_connect import connect_args

__all__ = ("CHANNEL", "PostgresTransport")

log = logging.getLogger(__name__)

CHANNEL = "flowdeck_updates"
_RECONNECT_SECONDS = (0.1, 0.5, 1.0, 2.0, 5.0)


class PostgresTransport:
    max_message_bytes: int | None = 7_900

    def __init__(self, database_url: str, *, channel: str = CHANNEL, application_name: str = "flowdeck") -> None:
        self._connect_args = connect_args(database_url, application_name)
        self.channel = channel
        self._deliver: Callable[[bytes], None] | None = None
        self._topics: tuple[str, ...] = ()
        self._listener: asyncpg.Connection | None = None
        self._sender: asyncpg.Connection | None = None
        self._send_lock = asyncio.Lock()
        self._watch: asyncio.Task[None] | None = None
        self._lost = asyncio.Event()

    def channel_of(self, topic: str) -> str:
        return f"{self.channel}_{topic}"  # at most 63 bytes: "flowdeck_updates_" and 32 hex digits fit

    async def open(self, deliver: Callable[[bytes], None], topics: Sequence[str]) -> None:
        self._deliver = deliver
        self._topics = tuple(topics)
        for delay in (*_RECONNECT_SECONDS, None):  # PostgreSQL restarting as the process starts: wait for it
            try:
                await self._listen()
                self._sender = await asyncpg.connect(**self._connect_args)
                break
            except Exception as exc:
                if delay is None or not is_disconnect(exc):
                    raise
                log.warning("could not LISTEN (%s); trying again in %.1f s", exc, delay)
                await self.close()
                await asyncio.sleep(delay)
        self._lost.clear()  # a connection of a failed try may have said it closed
        self._watch = asyncio.create_task(self._reconnect_when_lost(), name="flowdeck-notify-watch")

    async def send(self, topic: str, message: bytes) -> None:
        """Send on the sending connection, opened again if PostgreSQL closed it; a send that lost its
        connection is sent once more on a new one (at worst a message arrives twice: receivers take
        an update again as it is)."""
        async with self._send_lock:
            for attempt in range(2):
                try:
                    if self._sender is None or self._sender.is_closed():
                        self._sender = await asyncpg.connect(**self._connect_args)
                    await self._sender.execute("SELECT pg_notify($1, $2)", self.channel_of(topic), message.decode())
                    return
                except Exception as exc:
                    if attempt or not is_disconnect(exc):
                        raise
                    with contextlib.suppress(Exception):
                        self._sender.terminate()  # type: ignore[union-attr]
                    self._sender = None

    async def close(self) -> None:
        if self._watch is not None:
            await cancel_and_wait([self._watch])
            self._watch = None
        for connection in (self._listener, self._sender):
            if connection is not None and not connection.is_closed():
                with contextlib.suppress(Exception):
                    await connection.close(timeout=2)
        self._listener = self._sender = None

    async def _listen(self) -> None:
        connection = await asyncpg.connect(**self._connect_args)
        connection.add_termination_listener(lambda _: self._lost.set())
        for topic in self._topics:
            await connection.add_listener(self.channel_of(topic), self._on_notify)
        self._listener = connection

    def _on_notify(self, _connection: Any, _pid: int, _channel: str, payload: str) -> None:
        if self._deliver is not None:
            self._deliver(payload.encode())

    async def _reconnect_when_lost(self) -> None:
        while True:
            await self._lost.wait()
            self._lost.clear()
            log.warning("the LISTEN connection to PostgreSQL was lost; opening it again")
            for delay in itertools.chain(_RECONNECT_SECONDS, itertools.repeat(_RECONNECT_SECONDS[-1])):
                try:
                    await self._listen()
                    if self._deliver is not None:
                        self._deliver(MISSED)
                    break
                except Exception as exc:  # noqa: BLE001 -- whatever it was, listening must come back
                    log.warning("could not LISTEN again (%s); trying again in %.1f s", exc, delay)
                    await asyncio.sleep(delay)
