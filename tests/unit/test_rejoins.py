"""After a gap in the live updates, every follower of a run is joined again (realtime/rejoins.py): gaps that
arrive during a round make one more round (not one each), and a join that failed is tried again."""

from __future__ import annotations

import asyncio

from flowdeck.realtime.rejoins import Rejoins
from tests.support.waiting import until


async def test_a_burst_of_gaps_makes_one_more_round_and_a_failed_join_is_tried_again() -> None:
    followers = [("sid-1", "run-a"), ("sid-2", "run-b")]
    joined: list[tuple[str, str]] = []
    first_round = asyncio.Event()
    go_on = asyncio.Event()
    failures = {"run-b": 1}  # PostgreSQL still away for run-b's first snapshot

    async def rejoin(follower: tuple[str, str]) -> None:
        sid, run_id = follower
        first_round.set()
        await go_on.wait()
        if failures.get(run_id):
            failures[run_id] -= 1
            raise ConnectionRefusedError("PostgreSQL is starting up")
        joined.append((sid, run_id))

    rejoins = Rejoins(lambda: followers, rejoin, retry_seconds=0.01)
    rejoins.gap()
    await first_round.wait()
    for _ in range(5):  # a burst while the first round is under way
        rejoins.gap()
    go_on.set()
    await until(lambda: rejoins._task is not None and rejoins._task.done(), what="the rounds to end")
    await rejoins.stop()
    assert rejoins.rounds == 2
    assert sorted(joined) == [("sid-1", "run-a"), ("sid-1", "run-a"), ("sid-2", "run-b")]
