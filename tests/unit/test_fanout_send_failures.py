"""While the transport is unreachable (PostgreSQL restarting, Redis down) the fan-out drops live messages
and says so once when it starts and once when it ends, with the count, not once per message."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Sequence

import pytest

from flowdeck.engine.fanout import Fanout
from flowdeck.engine.publisher import LocalPublisher


class FlakyTransport:
    max_message_bytes = None

    def __init__(self) -> None:
        self.down = False
        self.refused = 0
        self.sent_after_refusals = asyncio.Event()
        self.refused_three = asyncio.Event()

    async def open(self, deliver: Callable[[bytes], None], topics: Sequence[str]) -> None:
        pass

    async def send(self, topic: str, message: bytes) -> None:
        if self.down:
            self.refused += 1
            if self.refused >= 3:
                self.refused_three.set()
            raise ConnectionRefusedError("connection refused")
        if self.refused:
            self.sent_after_refusals.set()

    async def close(self) -> None:
        pass


async def test_an_unreachable_transport_is_reported_once_with_what_it_dropped(
    caplog: pytest.LogCaptureFixture,
) -> None:
    transport = FlakyTransport()
    fanout = Fanout(transport, LocalPublisher(), heartbeat_seconds=0.02, ack_seconds=0.05)
    await fanout.start()
    try:
        with caplog.at_level(logging.WARNING, logger="flowdeck.engine.fanout"):
            transport.down = True  # the heartbeats go on being sent meanwhile
            await asyncio.wait_for(transport.refused_three.wait(), 10)
            transport.down = False
            await asyncio.wait_for(transport.sent_after_refusals.wait(), 10)
            refused = transport.refused
    finally:
        await fanout.stop()

    messages = [(r.getMessage(), r.exc_info is not None) for r in caplog.records]
    assert messages[0] == (
        "could not send live messages to the other processes; dropping them until it works again",
        True,
    )
    assert messages[1:] == [
        (f"sending live messages to the other processes again ({refused} could not be sent)", False)
    ]
