"""Early release's bookkeeping without a database: the WAL flushes that make PostgreSQL's asynchronous
commits durable (storage/pg_durability.py), and the order of announcements while some wait for them
(engine/effects.Announcer)."""

from __future__ import annotations

import asyncio
import datetime

import pytest

from flowdeck.domain.statuses import NodeStatus
from flowdeck.engine.effects import Announcer, Effects
from flowdeck.engine.publisher import NodeUpdate, Update
from flowdeck.storage.pg_durability import OutcomeUnknownError, WalFlusher

STARTED = datetime.datetime(2026, 11, 27, 8, 0, tzinfo=datetime.UTC)
RESTARTED = datetime.datetime(2026, 11, 27, 9, 0, tzinfo=datetime.UTC)


class _Server:
    """Answers flushes as PostgreSQL would: with when it started, or not at all while it is down."""

    def __init__(self) -> None:
        self.started_at = STARTED
        self.down = False
        self.flushes = 0
        self.refused = 0
        self.refusing = asyncio.Event()
        """Set once two flushes in a row were refused."""

    async def flush(self) -> datetime.datetime:
        if self.down:
            self.refused += 1
            if self.refused >= 2:
                self.refusing.set()
            raise ConnectionRefusedError("PostgreSQL is not taking connections")
        self.flushes += 1
        return self.started_at


def _flusher(server: _Server, lost: list[BaseException]) -> WalFlusher:
    return WalFlusher(server.flush, delay=0.001, lost=lost.append)


async def test_commits_between_two_flushes_share_one() -> None:
    server, lost = _Server(), list[BaseException]()
    flusher = _flusher(server, lost)
    batch = [flusher.released(STARTED) for _ in range(5)]
    assert len(set(map(id, batch))) == 1  # one batch: one flush for all five
    await flusher.settle()
    assert all(future.done() and future.exception() is None for future in batch)
    assert server.flushes == 1
    assert not lost


async def test_a_flush_from_a_restarted_postgresql_leaves_the_outcome_unknown() -> None:
    server, lost = _Server(), list[BaseException]()
    flusher = _flusher(server, lost)
    before = flusher.released(STARTED)
    server.started_at = RESTARTED  # it restarted between the commit and its flush
    with pytest.raises(OutcomeUnknownError, match="restarted"):
        await flusher.settle()
    assert isinstance(before.exception(), OutcomeUnknownError)
    assert len(lost) == 1
    after = flusher.released(RESTARTED)  # made on a connection to the new PostgreSQL: durable as usual
    await flusher.settle()
    assert after.exception() is None


async def test_a_flush_is_sent_again_until_postgresql_answers() -> None:
    server, lost = _Server(), list[BaseException]()
    flusher = _flusher(server, lost)
    pending = flusher.released(STARTED)
    server.down = True
    flusher.flush_soon()
    await asyncio.wait_for(server.refusing.wait(), timeout=5)
    assert not pending.done()  # refused and sent again: the batch waits, neither durable nor lost
    server.down = False  # the same PostgreSQL answers again: what it had was never lost
    await asyncio.wait_for(flusher.settle(), timeout=5)
    assert pending.exception() is None
    assert not lost


async def test_the_flush_comes_by_itself_after_the_delay() -> None:
    server, lost = _Server(), list[BaseException]()
    flusher = _flusher(server, lost)
    future = flusher.released(STARTED)
    await asyncio.wait_for(future, timeout=5)  # nobody asked: the timer sent it
    assert server.flushes == 1


class _Recorder:
    def __init__(self) -> None:
        self.published: list[str] = []

    def publish(self, updates: list[Update]) -> None:
        self.published += [u.node_id for u in updates if isinstance(u, NodeUpdate)]


def _effects(node_id: str) -> Effects:
    effects = Effects(0.0)
    effects.node(("run", node_id, ""), NodeStatus.COMPLETED, 1)
    return effects


def test_announcements_keep_the_order_of_their_decisions() -> None:
    recorder = _Recorder()
    announcer = Announcer(recorder)
    first = announcer.hold()  # early-released: not durable yet
    announcer(_effects("b"))  # durable at once, but decided after "a"
    second = announcer.hold()
    assert recorder.published == []
    announcer.settle(second, _effects("c"))
    assert recorder.published == []  # still behind "a"
    announcer.settle(first, _effects("a"))
    assert recorder.published == ["a", "b", "c"]
    announcer(_effects("d"))
    assert recorder.published == ["a", "b", "c", "d"]


def test_a_lost_decision_announces_nothing_and_holds_nothing_up() -> None:
    recorder = _Recorder()
    announcer = Announcer(recorder)
    lost = announcer.hold()
    announcer(_effects("b"))
    announcer.settle(lost, None)
    assert recorder.published == ["b"]


async def test_closing_while_postgresql_is_away_gives_up_after_its_patience() -> None:
    server, lost = _Server(), list[BaseException]()
    flusher = _flusher(server, lost)
    pending = flusher.released(STARTED)
    server.down = True
    await asyncio.wait_for(flusher.close(patience=0.2), timeout=5)  # the process stops: it does not hang
    assert isinstance(pending.exception(), OutcomeUnknownError)


async def test_closing_ends_a_flush_whose_cancellation_was_lost() -> None:
    """Python 3.11's ``wait_for`` loses a cancellation that arrives as the call it awaits ends: the flush then
    fails as if PostgreSQL were away, and would be sent again and again after close() had given up."""
    lost, entered, swallowed = list[BaseException](), asyncio.Event(), list[bool]()

    async def flush() -> datetime.datetime:
        entered.set()
        try:
            await asyncio.Event().wait()  # PostgreSQL does not answer
        except asyncio.CancelledError:
            if swallowed:
                raise
            swallowed.append(True)  # lost
        raise ConnectionRefusedError("PostgreSQL is not taking connections")

    flusher = WalFlusher(flush, delay=0.001, lost=lost.append)
    pending = flusher.released(STARTED)
    await asyncio.wait_for(entered.wait(), timeout=5)
    await asyncio.wait_for(flusher.close(patience=0.1), timeout=5)  # the process stops: it does not hang
    assert swallowed == [True]
    assert isinstance(pending.exception(), OutcomeUnknownError)
