"""A Redis that accepts connections and never answers (hung, or something else on its port): the Redis
transport fails the start-up within its time bound, naming the setting and where, never the password;
a send gives up within the bound too (the fan-out drops it and says so once)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest
import redis.asyncio as redis

from flowdeck.engine.redis_bridge import RedisTransport


@pytest.fixture
async def silent_port() -> AsyncIterator[int]:
    """A TCP server that reads whatever it is sent and answers nothing."""
    readers: list[asyncio.Task[None]] = []

    async def swallow(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while await reader.read(4096):
            pass
        writer.close()

    def accepted(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        readers.append(asyncio.ensure_future(swallow(reader, writer)))

    server = await asyncio.start_server(accepted, "127.0.0.1", 0)
    yield server.sockets[0].getsockname()[1]
    server.close()
    for task in readers:
        task.cancel()
    await asyncio.gather(*readers, return_exceptions=True)


async def test_a_redis_that_never_answers_fails_the_start_up_in_time(silent_port: int) -> None:
    transport = RedisTransport(f"redis://:s3cret@127.0.0.1:{silent_port}/0", timeout=0.3)

    with pytest.raises(ConnectionError) as failed:
        await transport.open(lambda message: None, ["shared"])

    message = str(failed.value)
    assert message == f"Redis at 127.0.0.1:{silent_port} (FLOWDECK_REDIS_URL) did not answer within 0.3 s"
    assert "s3cret" not in message


async def test_a_send_to_a_redis_that_stopped_answering_gives_up_in_time(silent_port: int) -> None:
    transport = RedisTransport(f"redis://127.0.0.1:{silent_port}/0", timeout=0.3)
    transport._client = redis.from_url(transport.url)  # as open leaves it, with the server now silent

    with pytest.raises(TimeoutError):
        await transport.send("shared", b"{}")
    await transport.close()
