"""The registry of who watches which run's node updates (``engine/watches.py``): expiry of a process not heard
from, a clean goodbye, and a watch that waits for the other live processes' acknowledgements only."""

from __future__ import annotations

import asyncio

from flowdeck.engine.watches import Watches


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def registry(clock: Clock, said: list[dict[str, object]] | None = None) -> Watches:
    return Watches("here", (said if said is not None else []).append, heartbeat_seconds=1.0, clock=clock)


def test_a_watcher_not_heard_for_ten_heartbeats_is_sent_nothing_and_forgotten() -> None:
    clock = Clock()
    watches = registry(clock)
    watches.heard("serve-a")
    watches.add("serve-a", ["run-1"])
    assert watches.targets("run-1") == {"serve-a"}
    assert watches.targets("run-2") == set()
    clock.now += 9.9
    watches.heard("serve-a")  # its heartbeat: alive ten more heartbeats
    clock.now += 9.9
    assert watches.targets("run-1") == {"serve-a"}
    clock.now += 0.2  # ten heartbeats without a word: dead
    assert watches.targets("run-1") == set()
    assert not watches.others_alive()
    watches.expire()
    watches.heard("serve-a")  # it comes back (a new message): its old watches did not survive
    assert watches.targets("run-1") == set()


def test_a_goodbye_drops_the_watches_at_once_and_a_full_heartbeat_replaces_them() -> None:
    clock = Clock()
    watches = registry(clock)
    for origin in ("serve-a", "serve-b"):
        watches.heard(origin)
    watches.add("serve-a", ["run-1", "run-2"])
    watches.add("serve-b", ["*"])  # every run
    assert watches.targets("run-1") == {"serve-a", "serve-b"}
    watches.add("serve-a", ["run-2"], replace=True)  # its heartbeat: run-1 no longer watched there
    assert watches.targets("run-1") == {"serve-b"}
    watches.gone("serve-b")
    assert watches.targets("run-1") == set()
    assert watches.targets("run-2") == {"serve-a"}
    watches.remove("serve-a", ["run-2"])
    assert watches.targets("run-2") == set()


def test_run_ends_go_to_the_live_processes_that_did_not_say_they_want_only_failures() -> None:
    clock = Clock()
    watches = registry(clock)
    for origin in ("serve", "worker"):
        watches.heard(origin)
    assert watches.end_listeners() == {"serve", "worker"}  # until told otherwise, a process hears them
    watches.hears_ends("worker", every=False)  # its heartbeat: a flowdeck worker
    assert watches.end_listeners() == {"serve"} and watches.alive() == {"serve", "worker"}
    clock.now += 10.1  # neither heard for ten heartbeats
    assert watches.end_listeners() == set()
    watches.expire()
    watches.heard("worker")  # back, before its next heartbeat: it may want them again, so it gets them
    assert watches.end_listeners() == {"worker"}
    watches.hears_ends("worker", every=False)
    watches.gone("worker")
    watches.heard("worker")
    assert watches.end_listeners() == {"worker"}


async def test_a_watch_returns_once_every_live_process_acknowledged_it_and_is_announced_once() -> None:
    clock, said = Clock(), list[dict[str, object]]()
    watches = registry(clock, said)
    clock.now += 1.5  # past its start-up grace: it has heard every live process
    for origin in ("worker-1", "worker-2"):
        watches.heard(origin)
    first = asyncio.create_task(watches.watch("run-1"))
    second = asyncio.create_task(watches.watch("run-1"))  # another client of this process, meanwhile
    await asyncio.sleep(0)
    assert said == [{"watch": ["run-1"], "seq": 1}]
    watches.acknowledged("worker-1", 1)
    await asyncio.sleep(0)
    assert not first.done() and not second.done()
    watches.gone("worker-2")  # it stopped: nothing more to wait for
    await asyncio.wait_for(asyncio.gather(first, second), 1)
    await watches.watch("run-1")  # known everywhere already: at once, unannounced
    assert said == [{"watch": ["run-1"], "seq": 1}]
    for _ in range(3):
        watches.unwatch("run-1")
    assert watches.watched == []
    assert said[-1] == {"unwatch": ["run-1"]} and len(said) == 2


async def test_a_watch_no_process_answers_returns_after_its_timeout() -> None:
    clock = Clock()
    watches = Watches("here", lambda _: None, heartbeat_seconds=1.0, ack_seconds=0.05, clock=clock)
    clock.now += 1.5
    watches.heard("stuck")
    await asyncio.wait_for(watches.watch(None), 1)
    assert watches.watched == ["*"]


async def test_an_acknowledgement_after_the_watch_stopped_waiting_says_updates_may_have_been_missed() -> None:
    """The watcher read its snapshot when the wait ended; a process that published updates of the run before
    it heard the watch sent none of them and they may be newer than that snapshot: its late answer is a gap."""
    clock, gaps = Clock(), list[str]()
    watches = Watches(
        "here", lambda _: None, heartbeat_seconds=1.0, ack_seconds=0.05, clock=clock, late=lambda: gaps.append("gap")
    )
    clock.now += 1.5
    for origin in ("stuck", "prompt", "dying"):
        watches.heard(origin)
    watching = asyncio.create_task(watches.watch("run-1"))
    await asyncio.sleep(0)
    watches.acknowledged("prompt", 1)
    await asyncio.wait_for(watching, 1)  # the wait ended without "stuck" and "dying"
    assert gaps == []
    watches.acknowledged("prompt", 1)  # a repeated answer of one that was in time: no gap
    watches.gone("dying")  # no answer will come from it: nothing to wait for
    assert gaps == []
    watches.acknowledged("stuck", 1)
    assert gaps == ["gap"]
    watches.acknowledged("stuck", 1)  # once per late process
    assert gaps == ["gap"]


async def test_a_watch_in_the_start_up_grace_also_waits_for_the_processes_heard_meanwhile() -> None:
    clock, said = Clock(), list[dict[str, object]]()
    watches = Watches("here", said.append, heartbeat_seconds=0.1, clock=clock)
    watching = asyncio.create_task(watches.watch("run-1"))  # no other process known yet
    await asyncio.sleep(0)
    watches.heard("worker-1")  # its answer to this process's hello, a moment later
    clock.now += 0.15  # the grace is over: every live process has been heard
    async with asyncio.timeout(5):
        while watches.awaiting() != {"worker-1"}:  # the grace's end: it waits for worker-1 now
            await asyncio.sleep(0.01)
    assert not watching.done()
    watches.acknowledged("worker-1", 1)
    await asyncio.wait_for(watching, 1)
