"""Gaps in the live updates between processes are said, so that clients read their runs again: after the
transport listened again (``MISSED``), when another process says it dropped messages, and to a process
that was taken for dead (its watches were not served meanwhile) as soon as it is heard again."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import msgspec

from flowdeck.engine.fanout import MISSED, SHARED, Fanout
from flowdeck.engine.publisher import LocalPublisher
from tests.support.waiting import until


class RecordingTransport:
    max_message_bytes = None

    def __init__(self) -> None:
        self.deliver: Callable[[bytes], None] | None = None
        self.sent: list[tuple[str, dict[str, object]]] = []
        self.down = False
        self.refused = 0

    async def open(self, deliver: Callable[[bytes], None], topics: Sequence[str]) -> None:
        self.deliver = deliver

    async def send(self, topic: str, message: bytes) -> None:
        if self.down:
            self.refused += 1
            raise ConnectionRefusedError("connection refused")
        self.sent.append((topic, msgspec.json.decode(message)))

    async def close(self) -> None:
        pass

    def said(self, key: str) -> list[tuple[str, dict[str, object]]]:
        return [(topic, body) for topic, body in self.sent if key in body]


async def started(transport: RecordingTransport) -> tuple[Fanout, list[int]]:
    publisher = LocalPublisher()
    gaps: list[int] = []
    publisher.on_gap(lambda: gaps.append(1))
    fanout = Fanout(transport, publisher, heartbeat_seconds=0.02, ack_seconds=0.05)
    await fanout.start()
    return fanout, gaps


async def test_a_transport_that_listened_again_and_a_process_that_dropped_messages_make_a_gap() -> None:
    transport = RecordingTransport()
    fanout, gaps = await started(transport)
    try:
        assert transport.deliver is not None
        transport.deliver(MISSED)
        await until(lambda: len(gaps), lambda n: n == 1, what="the gap after listening again")
        transport.deliver(msgspec.json.encode({"from": "worker-2", "missed": 3}))
        await until(lambda: len(gaps), lambda n: n == 2, what="the gap another process said")
        transport.deliver(msgspec.json.encode({"from": "worker-2", "alive": 1, "watch": [], "full": True}))
        await until(lambda: fanout.watches.others_alive(), what="worker-2's heartbeat")
    finally:
        await fanout.stop()
    assert len(gaps) == 2  # a heartbeat is no gap


async def test_a_sender_that_could_not_send_says_how_many_messages_it_dropped() -> None:
    transport = RecordingTransport()
    fanout, _ = await started(transport)
    try:
        transport.down = True
        await until(lambda: transport.refused, lambda n: n >= 2, what="two heartbeats refused")
        transport.down = False
        said = await until(lambda: transport.said("missed"), what="the count of dropped messages")
    finally:
        await fanout.stop()
    assert said[0][0] == SHARED
    assert isinstance(said[0][1]["missed"], int) and said[0][1]["missed"] >= 1


async def test_a_process_heard_again_after_it_was_taken_for_dead_is_told_it_missed_updates() -> None:
    transport = RecordingTransport()
    fanout, _ = await started(transport)
    try:
        assert transport.deliver is not None
        heartbeat = msgspec.json.encode({"from": "serve-b", "alive": 1, "watch": ["run-1"], "full": True})
        transport.deliver(heartbeat)
        await until(lambda: fanout.watches.targets("run-1"), what="serve-b watching run-1")
        assert transport.said("missed") == []  # first heard: nothing was kept from it
        # Ten heartbeats without a word (a stall, a lost connection): taken for dead, its watches dropped.
        await until(lambda: fanout.watches.others_alive(), lambda alive: not alive, what="serve-b taken for dead")
        await until(lambda: fanout.watches.taken_for_dead("serve-b"), what="serve-b expired")
        transport.deliver(heartbeat)
        said = await until(lambda: transport.said("missed"), what="serve-b told it missed updates")
    finally:
        await fanout.stop()
    assert said == [("serve-b", {"from": fanout.origin, "missed": 1})]
