"""The Socket.IO relay's join (realtime/relay.py): a connection that just joined with a snapshot never gets
an update its snapshot already shows, even one published after it entered the room (a decision's update
is published a moment after its commit, so a snapshot read in between shows it already)."""

from __future__ import annotations

import asyncio
from typing import Any

from flowdeck.domain.statuses import NodeStatus, RunStatus
from flowdeck.engine.projection import NodeView
from flowdeck.engine.publisher import LocalPublisher, NodeUpdate, RunUpdate
from flowdeck.realtime.relay import RunRelay
from flowdeck.storage.records import InstanceRecord
from flowdeck.storage.run_queries import RunView


class _Manager:
    def __init__(self) -> None:
        self.rooms: dict[str, list[tuple[str, str]]] = {}

    def get_participants(self, namespace: str, room: str) -> list[tuple[str, str]]:
        return list(self.rooms.get(room, []))


class _Packet:
    def __init__(self, kind: int, namespace: str, data: list[Any]) -> None:
        self.data = data

    def encode(self) -> list[Any]:
        return self.data


class _Engineio:
    def __init__(self) -> None:
        self.sent: list[tuple[str, Any]] = []

    async def send(self, eio_sid: str, packet: Any) -> None:
        self.sent.append((eio_sid, packet))


class _Sio:
    packet_class = _Packet

    def __init__(self) -> None:
        self.manager = _Manager()
        self.eio = _Engineio()

    async def enter_room(self, sid: str, room: str) -> None:
        self.manager.rooms.setdefault(room, []).append((sid, f"eio-{sid}"))


def _view(status: NodeStatus) -> RunView:
    run = InstanceRecord(
        "r1", "t", "w", 1, False, RunStatus.RUNNING, 3, "api", None, None, None, 0.0, 0.0, None, 5.0, None
    )
    return RunView(run, {"a": NodeView(status=status, attempt=1)})


async def test_a_fresh_joiner_gets_only_what_its_snapshot_does_not_show() -> None:
    sio = _Sio()
    relay = RunRelay(sio, LocalPublisher())
    sio.manager.rooms["r1"] = [("old", "eio-old")]  # in the room since before
    relay.begin_join("new", "r1")
    await relay.finish_join("new", "r1", _view(NodeStatus.RUNNING))  # its snapshot shows a RUNNING

    await relay._deliver(NodeUpdate("r1", "a", "", NodeStatus.RUNNING, 1, 4.0))  # published after the commit
    await relay._deliver(NodeUpdate("r1", "a", "", NodeStatus.COMPLETED, 1, 6.0))

    got = [(eio_sid, packet[1]["status"]) for eio_sid, packet in sio.eio.sent]
    assert got == [("eio-old", "RUNNING"), ("eio-old", "COMPLETED"), ("eio-new", "COMPLETED")]


async def test_a_fresh_joiner_gets_the_call_its_snapshot_does_not_name() -> None:
    sio = _Sio()
    relay = RunRelay(sio, LocalPublisher())
    relay.begin_join("new", "r1")
    await relay.finish_join("new", "r1", _view(NodeStatus.RUNNING))  # RUNNING, no child run yet

    await relay._deliver(NodeUpdate("r1", "a", "", NodeStatus.RUNNING, 1, 3.9))  # its start: shown already
    await relay._deliver(NodeUpdate("r1", "a", "", NodeStatus.RUNNING, 1, 4.0, child_instance_id="c1"))

    got = [(eio_sid, packet[1]["childInstanceId"]) for eio_sid, packet in sio.eio.sent]
    assert got == [("eio-new", "c1")]


def _drained(queue: asyncio.Queue[Any]) -> list[tuple[str, str]]:
    return [(u.instance_id, u.status.value) for u in (queue.get_nowait() for _ in range(queue.qsize()))]


async def test_only_the_updates_of_runs_watched_here_are_queued_for_the_relay() -> None:
    """Published updates of a run nobody here is in the room of, or joining, never reach the relay's queue (a
    connection that joins later reads a snapshot, which shows them: publishing follows the commit)."""
    sio, publisher = _Sio(), LocalPublisher()
    relay = RunRelay(sio, publisher)
    relay.start()
    try:
        queue = relay._consumer._subscription.queue  # type: ignore[union-attr]
        publisher.publish(
            [NodeUpdate("r1", "a", "", NodeStatus.RUNNING, 1, 1.0), RunUpdate("r1", RunStatus.RUNNING, 1.0)]
        )
        assert queue.qsize() == 0
        relay.begin_join("new", "r1")  # joining: what is published from now on is kept for it
        publisher.publish([NodeUpdate("r1", "a", "", NodeStatus.COMPLETED, 1, 2.0)])
        publisher.publish([NodeUpdate("r2", "a", "", NodeStatus.COMPLETED, 1, 2.0)])
        assert _drained(queue) == [("r1", "COMPLETED")]
        relay.cancel_join("new", "r1")
        sio.manager.rooms["r2"] = [("old", "eio-old")]  # a connection in r2's room
        publisher.publish([NodeUpdate("r1", "b", "", NodeStatus.RUNNING, 1, 3.0)])
        publisher.publish([RunUpdate("r2", RunStatus.COMPLETED, 3.0)])
        assert _drained(queue) == [("r2", "COMPLETED")]
    finally:
        await relay.stop()
