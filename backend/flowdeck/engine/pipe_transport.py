"""The fan-out transport between ``flowdeck serve`` and its worker processes (``serve --workers N``) over
sockets serve holds to its children: what SQLite uses without Redis (it has no LISTEN/NOTIFY), so one
machine's cores share one database file with no other service. What travels and why: ``engine/fanout.py``.

serve is the hub (:class:`ChildPipes`): it makes a socket pair for each child as it starts it and passes
one end down (``flowdeck worker --supervised --parent-pipe FD``, :class:`ParentPipe`). A child says which
topics it hears; every message it sends reaches serve, which takes its own share and relays it to the other
children that hear its topic, in the order each sender sent them. A process's own messages never come
back to it (``Fanout`` ignores its own anyway). Processes on other machines, or ``flowdeck worker``
processes started by hand, are not reached: those need Redis (``FLOWDECK_REDIS_URL``).

A child that stops reading (frozen) does not hold serve up: what it has not read past
``MAX_UNREAD_BYTES`` is dropped for it, as Redis drops a slow subscriber's messages. Like the other
transports it keeps no history: the log does (``engine/fanout.py``).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
import struct
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from flowdeck.engine.task_stop import cancel_and_wait

__all__ = ("MAX_UNREAD_BYTES", "ChildPipes", "ParentPipe")

log = logging.getLogger(__name__)

MAX_UNREAD_BYTES = 16 * 1024 * 1024
"""What one child may leave unread before serve drops messages for it."""
_MAX_FRAME = 256 * 1024 * 1024  # a length past this is not ours: the stream is broken
_HEADER = struct.Struct(">I")
_EARLY_MESSAGES = 10_000  # kept for a child that has not yet said its topics
_SUBSCRIBE = b"S"
_MESSAGE = b"M"


def _frame(kind: bytes, body: bytes) -> bytes:
    return _HEADER.pack(len(body) + 1) + kind + body


def _message(topic: str, message: bytes) -> bytes:
    return _frame(_MESSAGE, topic.encode() + b"\0" + message)


async def _frames(reader: asyncio.StreamReader) -> tuple[bytes, bytes] | None:
    """The next (kind, body), or None at the end of the stream."""
    try:
        (size,) = _HEADER.unpack(await reader.readexactly(_HEADER.size))
        if not 0 < size <= _MAX_FRAME:
            raise ValueError(f"a frame of {size} bytes")
        frame = await reader.readexactly(size)
    except (asyncio.IncompleteReadError, ConnectionError):
        return None
    return frame[:1], frame[1:]


def _split(body: bytes) -> tuple[str, bytes]:
    topic, _, message = body.partition(b"\0")
    return topic.decode(), message


class ParentPipe:
    """A supervised worker's end: the socket ``serve`` passed it as file descriptor ``fd``."""

    max_message_bytes: int | None = None

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self._writer: asyncio.StreamWriter | None = None
        self._reading: asyncio.Task[None] | None = None

    async def open(self, deliver: Callable[[bytes], None], topics: Sequence[str]) -> None:
        reader, self._writer = await asyncio.open_unix_connection(sock=socket.socket(fileno=self.fd))
        self._writer.write(_frame(_SUBSCRIBE, ",".join(topics).encode()))
        await self._writer.drain()
        self._reading = asyncio.create_task(self._read(reader, deliver), name="flowdeck-parent-pipe-in")

    async def send(self, topic: str, message: bytes) -> None:
        if self._writer is None or self._writer.is_closing():
            raise ConnectionError("the pipe to serve is closed")
        self._writer.write(_message(topic, message))
        await self._writer.drain()

    async def close(self) -> None:
        if self._reading is not None:
            await cancel_and_wait([self._reading])
            self._reading = None
        if self._writer is not None:
            self._writer.close()
            with contextlib.suppress(ConnectionError):
                await self._writer.wait_closed()
            self._writer = None

    @staticmethod
    async def _read(reader: asyncio.StreamReader, deliver: Callable[[bytes], None]) -> None:
        while (frame := await _frames(reader)) is not None:
            if frame[0] == _MESSAGE:
                deliver(_split(frame[1])[1])
        # serve is gone: the worker stops too (it reads end-of-file on its orders: worker_processes.py)


@dataclass(eq=False)
class _Child:
    writer: asyncio.StreamWriter | None = None
    topics: frozenset[str] | None = None
    """None until the child said them: what is sent meanwhile waits in ``early``."""
    early: list[tuple[str, bytes]] = field(default_factory=list)
    dropped: int = 0


class ChildPipes:
    """serve's end: one socket per worker process, made by :meth:`pair` as each starts (from any thread)."""

    max_message_bytes: int | None = None

    def __init__(self, *, max_unread_bytes: int = MAX_UNREAD_BYTES) -> None:
        self.max_unread_bytes = max_unread_bytes
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._waiting: list[socket.socket] = []  # paired before open()
        self._children: set[_Child] = set()
        self._tasks: set[asyncio.Task[None]] = set()
        self._deliver: Callable[[bytes], None] | None = None
        self._topics: frozenset[str] = frozenset()
        self._closed = False

    def pair(self) -> socket.socket:
        """A new child's end of a fresh socket pair (to pass to it, then close here); serve keeps the other."""
        ours, theirs = socket.socketpair()
        with self._lock:
            if self._closed:
                ours.close()
            elif self._loop is None:
                self._waiting.append(ours)
            else:
                self._loop.call_soon_threadsafe(self._attach, ours)
        return theirs

    @property
    def children(self) -> int:
        """How many children are connected."""
        return len(self._children)

    async def open(self, deliver: Callable[[bytes], None], topics: Sequence[str]) -> None:
        self._deliver, self._topics = deliver, frozenset(topics)
        with self._lock:
            self._loop = asyncio.get_running_loop()
            waiting, self._waiting = self._waiting, []
        for ours in waiting:
            self._attach(ours)

    async def send(self, topic: str, message: bytes) -> None:
        self._relay(topic, message, _message(topic, message), sender=None)

    async def close(self) -> None:
        with self._lock:
            self._closed = True
            self._loop = None
            waiting, self._waiting = self._waiting, []
        for ours in waiting:
            ours.close()
        writers = [child.writer for child in self._children if child.writer is not None]
        await cancel_and_wait(list(self._tasks))
        for writer in writers:  # closed by their tasks: wait until the sockets are (else the loop may end first)
            with contextlib.suppress(ConnectionError):
                await writer.wait_closed()

    def _attach(self, ours: socket.socket) -> None:
        if self._closed:
            ours.close()
            return
        child = _Child()  # known at once: what is sent from now on reaches it
        self._children.add(child)
        task = asyncio.create_task(self._serve(child, ours), name="flowdeck-child-pipe")
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _serve(self, child: _Child, ours: socket.socket) -> None:
        try:
            reader, child.writer = await asyncio.open_unix_connection(sock=ours)
            while (frame := await _frames(reader)) is not None:
                kind, body = frame
                if kind == _SUBSCRIBE:
                    child.topics = frozenset(body.decode().split(","))
                    early, child.early = child.early, []
                    for topic, framed in early:
                        if topic in child.topics:
                            self._write(child, framed)
                elif kind == _MESSAGE:
                    topic, message = _split(body)
                    self._relay(topic, message, _frame(kind, body), sender=child)
        except ValueError:
            log.warning("a worker process's pipe carried something unreadable: closed", exc_info=True)
        finally:  # the child exited (or serve stops): forget it
            self._children.discard(child)
            if child.writer is not None:
                child.writer.close()
            else:
                ours.close()

    def _relay(self, topic: str, message: bytes, framed: bytes, *, sender: _Child | None) -> None:
        if sender is not None and topic in self._topics and self._deliver is not None:
            self._deliver(message)
        for child in self._children:
            if child is sender:
                continue
            if child.topics is None:
                if len(child.early) < _EARLY_MESSAGES:
                    child.early.append((topic, framed))
            elif topic in child.topics:
                self._write(child, framed)

    def _write(self, child: _Child, framed: bytes) -> None:
        if child.writer is None or child.writer.is_closing():
            return
        if child.writer.transport.get_write_buffer_size() > self.max_unread_bytes:
            child.dropped += 1
            if child.dropped == 1:
                log.warning(
                    "a worker process has left %d bytes of live messages unread: dropping its messages until it reads",
                    self.max_unread_bytes,
                )
            return
        if child.dropped:
            log.warning("a worker process reads its live messages again (%d were dropped)", child.dropped)
            child.dropped = 0
        child.writer.write(framed)
