"""What a process's fan-out takes from its publisher as updates are published: a process alone (past its
start-up grace) takes nothing; with another process alive it takes every run's end and the other updates of
the runs another process watches, and routes them again when it sends; in the start-up grace it takes
everything. So an update nobody elsewhere wants is never queued or woken for (one less queue and task
wake-up per node)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence

from flowdeck.domain.statuses import NodeStatus, RunStatus
from flowdeck.engine.fanout import SHARED, Fanout
from flowdeck.engine.publisher import LocalPublisher, NodeUpdate, RunUpdate


class QuietTransport:
    max_message_bytes: int | None = None

    def __init__(self) -> None:
        self.sent: list[tuple[str, bytes]] = []
        self.sending = asyncio.Event()

    async def open(self, deliver: Callable[[bytes], None], topics: Sequence[str]) -> None:
        pass

    async def send(self, topic: str, message: bytes) -> None:
        self.sent.append((topic, message))
        self.sending.set()

    async def close(self) -> None:
        pass


def _node(run: str) -> NodeUpdate:
    return NodeUpdate(run, "n1", "", NodeStatus.COMPLETED, 1, 0.0)


async def test_a_process_alone_queues_nothing_and_with_others_only_what_they_may_want() -> None:
    publisher = LocalPublisher()
    fanout = Fanout(QuietTransport(), publisher, heartbeat_seconds=0.02, ack_seconds=0.05)
    await fanout.start()  # returns once its grace is over: alone, nobody watches anything
    try:
        outgoing = fanout._outgoing
        assert outgoing is not None
        publisher.publish([_node("r1"), RunUpdate("r1", RunStatus.COMPLETED, 0.0), _node("r2")])
        assert outgoing.queue.qsize() == 0 and outgoing.dropped == 0

        fanout.watches.heard("other-process")  # another process is alive, watching nothing
        publisher.publish(
            [_node("r1"), RunUpdate("r1", RunStatus.RUNNING, 0.0), RunUpdate("r1", RunStatus.FAILED, 0.0)]
        )
        fanout.watches.add("other-process", ["r2"])  # a page there shows r2
        publisher.publish([_node("r1"), _node("r2"), RunUpdate("r2", RunStatus.RUNNING, 0.0)])
        queued = [outgoing.queue.get_nowait() for _ in range(outgoing.queue.qsize())]
        assert [(type(u).__name__, u.instance_id, u.status.value) for u in queued] == [
            ("RunUpdate", "r1", "FAILED"),
            ("NodeUpdate", "r2", "COMPLETED"),
            ("RunUpdate", "r2", "RUNNING"),
        ]
    finally:
        await fanout.stop()


async def test_in_the_start_up_grace_every_update_is_taken() -> None:
    publisher = LocalPublisher()
    transport = QuietTransport()
    fanout = Fanout(transport, publisher, heartbeat_seconds=5, ack_seconds=0.05)
    starting = asyncio.create_task(fanout.start())  # its grace lasts 7.5 s: it may not know the others yet
    try:
        await asyncio.wait_for(transport.sending.wait(), 5)  # its hello: sent once it took its subscription
        assert fanout._outgoing is not None
        publisher.publish([_node("r1")])
        assert fanout.watches.in_grace
        assert fanout._outgoing.queue.qsize() == 1
    finally:
        starting.cancel()
        await asyncio.gather(starting, return_exceptions=True)
        await fanout.stop()


async def test_a_runs_updates_before_its_end_go_to_its_watchers_and_its_end_to_every_process() -> None:
    """A worker process needs other processes' runs only when they end (flow-control slots, waits for a
    run, failed runs' plans); a run's start and SLA breach only a page showing the run shows."""
    publisher = LocalPublisher()
    fanout = Fanout(QuietTransport(), publisher, heartbeat_seconds=0.02, ack_seconds=0.05)
    await fanout.start()
    try:
        fanout.watches.heard("serve")
        fanout.watches.add("serve", ["r1"])  # a page in serve shows r1
        fanout.watches.heard("worker")
        breach = RunUpdate("r2", RunStatus.RUNNING, 0.0, sla_seconds=5.0)
        routed = fanout._route(
            [
                RunUpdate("r1", RunStatus.RUNNING, 0.0),
                RunUpdate("r2", RunStatus.RUNNING, 0.0),
                breach,
                RunUpdate("r2", RunStatus.CANCELLED, 0.0),
                RunUpdate("r1", RunStatus.COMPLETED, 0.0),
            ]
        )
    finally:
        await fanout.stop()
    assert [(topics, [(u.instance_id, u.status.value) for u in part]) for topics, part in routed] == [
        (("serve",), [("r1", "RUNNING")]),
        ((SHARED,), [("r2", "CANCELLED"), ("r1", "COMPLETED")]),
    ]
