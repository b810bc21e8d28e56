"""serve's pipes to its worker processes (``engine/pipe_transport.py``): a child's message reaches serve and the
other children that hear its topic, never itself; a child that exits is forgotten; a child that stops reading
has its messages dropped past the limit, serve goes on, and it hears again once it reads."""

from __future__ import annotations

import asyncio
import logging
import socket
from collections.abc import Callable

import pytest

from flowdeck.engine.pipe_transport import ChildPipes, ParentPipe


class Heard:
    def __init__(self) -> None:
        self.queue: asyncio.Queue[bytes] = asyncio.Queue()

    def __call__(self, message: bytes) -> None:
        self.queue.put_nowait(message)

    async def next(self) -> bytes:
        return await asyncio.wait_for(self.queue.get(), 5)


async def until(condition: Callable[[], bool]) -> None:
    async with asyncio.timeout(5):
        while not condition():
            await asyncio.sleep(0.01)


async def test_a_message_reaches_the_processes_hearing_its_topic_and_never_its_sender() -> None:
    hub, heard_by = ChildPipes(), {name: Heard() for name in ("serve", "a", "b")}
    await hub.open(heard_by["serve"], ["all", "serve"])
    a, b = ParentPipe(hub.pair().detach()), ParentPipe(hub.pair().detach())
    await a.open(heard_by["a"], ["all", "a"])
    await b.open(heard_by["b"], ["all", "b"])
    try:
        await a.send("serve", b"a to serve")  # serve's own topic: only serve hears it
        await a.send("all", b"a to all")
        await b.send("a", b"b to a")
        await hub.send("b", b"serve to b")
        assert [await heard_by["serve"].next() for _ in range(2)] == [b"a to serve", b"a to all"]
        assert {await heard_by["b"].next() for _ in range(2)} == {b"a to all", b"serve to b"}  # two senders
        assert await heard_by["a"].next() == b"b to a"
        # Each channel keeps its order: a marker sent last arrives after anything that could have come back.
        await hub.send("all", b"marker")
        for name in ("a", "b"):
            assert await heard_by[name].next() == b"marker"
        await a.send("all", b"a's marker")
        assert await heard_by["serve"].next() == b"a's marker"
        assert heard_by["a"].queue.empty() and heard_by["serve"].queue.empty()
    finally:
        for transport in (a, b, hub):
            await transport.close()


async def test_a_child_that_exits_is_forgotten() -> None:
    hub = ChildPipes()
    await hub.open(Heard(), ["all"])
    child = ParentPipe(hub.pair().detach())
    await child.open(Heard(), ["all"])
    await until(lambda: hub.children == 1)
    await child.close()  # the process is gone: its end is closed
    await until(lambda: hub.children == 0)
    await hub.send("all", b"to nobody")  # nothing to write to, nothing raised
    await hub.close()


async def test_a_child_that_stops_reading_is_dropped_for_then_heard_again(caplog: pytest.LogCaptureFixture) -> None:
    hub = ChildPipes(max_unread_bytes=64 * 1024)
    await hub.open(Heard(), ["all"])
    frozen = hub.pair()
    frozen.setblocking(False)
    frozen.sendall(b"\x00\x00\x00\x04Sall")  # says its topics, then reads nothing (SIGSTOP)
    await until(lambda: hub.children == 1)
    await asyncio.sleep(0)  # the subscription read
    big = b"x" * 4096
    caplog.set_level(logging.WARNING, logger="flowdeck.engine.pipe_transport")
    sent = 0
    while not any("dropping its messages" in r.message for r in caplog.records):
        await hub.send("all", big)  # never waits for the reader
        sent += 1
        assert sent < 10_000, "serve never dropped for a child that reads nothing"
        await asyncio.sleep(0)
    # It reads again: once serve's buffer for it has room, a message sent then arrives, after every
    # earlier one that was kept (one channel, in order), and some of the earlier ones were not.
    reading = asyncio.create_task(_read_until(frozen, b"after"))
    while not reading.done():
        await hub.send("all", b"after")
        await asyncio.sleep(0.01)
    frames = _frames(reading.result())
    assert frames[-1] == b"Mall\0after"
    assert 0 < frames.count(b"Mall\0" + big) < sent
    assert any("reads its live messages again" in r.message for r in caplog.records)
    frozen.close()
    await hub.close()


async def _read_until(sock: socket.socket, tail: bytes) -> bytes:
    data, loop = b"", asyncio.get_running_loop()
    async with asyncio.timeout(10):
        while not data.endswith(tail):
            data += await loop.sock_recv(sock, 1 << 20)
    return data


def _frames(data: bytes) -> list[bytes]:
    frames = []
    while data:
        size = int.from_bytes(data[:4], "big")
        frames.append(data[4 : 4 + size])
        data = data[4 + size :]
    return frames
