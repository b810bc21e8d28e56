"""SQLite's write lock between processes (``storage/sqlite_writer_lock.py``): a writer that must wait for
another process's writer waits in a thread, so its event loop goes on, and it begins the moment the other
lets go. Two ``Database`` objects on one file stand for two processes (each holds its own lock file
descriptor, and ``flock`` locks of two descriptors exclude each other as two processes' do)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import sqlalchemy as sa

from flowdeck.storage.database import Database
from flowdeck.storage.sqlite_writer_lock import WriterLock
from tests.support.waiting import until


async def test_a_writer_waits_for_another_without_stopping_its_event_loop(tmp_path: Path) -> None:
    path = str(tmp_path / "lock")
    holder, waiter = WriterLock(path), WriterLock(path)
    order: list[str] = []
    await holder.acquire()

    async def wait() -> None:
        await waiter.acquire()
        order.append("waiter took it")

    async def let_go() -> None:  # runs only while the loop runs: the waiter's wait must not stop it
        await asyncio.sleep(0.05)
        order.append("holder let go")
        holder.release()

    await asyncio.wait_for(asyncio.gather(wait(), let_go()), 10)
    assert order == ["holder let go", "waiter took it"]
    waiter.release()
    for lock in (holder, waiter):
        lock.close()


async def test_a_cancelled_wait_gives_the_lock_back_when_it_would_have_taken_it(tmp_path: Path) -> None:
    path = str(tmp_path / "lock")
    holder, cancelled, later = WriterLock(path), WriterLock(path), WriterLock(path)
    await holder.acquire()
    waiting = asyncio.create_task(cancelled.acquire())
    await asyncio.sleep(0)  # its thread waits
    waiting.cancel()
    holder.release()  # the cancelled wait's thread takes it, and gives it back
    await asyncio.wait_for(later.acquire(), 10)
    later.release()
    for lock in (holder, cancelled, later):
        lock.close()


async def test_two_processes_writing_one_file_at_once_both_go_on(tmp_path: Path) -> None:
    """Before the lock, the second one's BEGIN IMMEDIATE stopped the one event loop in SQLite's busy handler
    while the first one's group waited for that loop to commit: "database is locked" after 5 s."""
    url = f"sqlite+aiosqlite:///{tmp_path / 'f.db'}"
    first, second = Database(url), Database(url)
    await first.create_all()
    try:
        table = sa.table("tenants", sa.column("id"), sa.column("name"), sa.column("created_at"))

        async def write(db: Database, n: int) -> None:
            async with db.transaction() as conn:
                await conn.execute(sa.insert(table).values(id=f"t{n}", name=f"tenant {n}", created_at=0.0))

        await asyncio.wait_for(asyncio.gather(*(write((first, second)[n % 2], n) for n in range(40))), 20)
        async with second.read() as conn:
            assert (await conn.execute(sa.text("SELECT count(*) FROM tenants"))).scalar() == 40
    finally:
        await first.dispose()
        await second.dispose()


async def test_the_holder_can_tell_that_another_writer_waits(tmp_path: Path) -> None:
    path = str(tmp_path / "lock")
    holder, waiter = WriterLock(path), WriterLock(path)
    await holder.acquire()
    assert not holder.contended()
    waiting = asyncio.create_task(waiter.acquire())
    await until(holder.contended, timeout=10, what="the holder seeing the waiter")
    holder.release()
    await asyncio.wait_for(waiting, 10)
    assert not waiter.contended()  # it holds the lock now, and nobody waits for it
    waiter.release()
    for lock in (holder, waiter):
        lock.close()


async def test_an_open_group_commits_at_its_next_write_once_another_process_waits(tmp_path: Path) -> None:
    """An early-released group stays open to share its commit with the writes that follow (up to
    ``defer_seconds``); while another process waits for the write lock, the group commits at its next write
    instead, so the other process does not wait out the window (here a minute: the test would time out)."""
    url = f"sqlite+aiosqlite:///{tmp_path / 'f.db'}"
    holder, other = Database(url, defer_seconds=60.0), Database(url)
    await holder.create_all()
    table = sa.table("tenants", sa.column("id"), sa.column("name"), sa.column("created_at"))

    async def write(db: Database, tenant: str, *, defer: bool) -> asyncio.Future[None] | None:
        async with db.transaction(defer=defer) as conn:
            await conn.execute(sa.insert(table).values(id=tenant, name=tenant, created_at=0.0))
        return conn.committed

    try:
        first = await write(holder, "a", defer=True)
        assert first is not None and not first.done()  # its group is open, holding the write lock
        waiting = asyncio.create_task(write(other, "b", defer=False))
        observer = WriterLock(f"{tmp_path / 'f.db'}-writer")
        await until(observer.contended, timeout=10, what="the other writer waiting")
        observer.close()
        await write(holder, "c", defer=True)  # ends with another process waiting: the group commits

        await asyncio.wait_for(waiting, 10)
        assert first.done() and first.exception() is None
        async with other.read() as conn:
            assert (await conn.execute(sa.text("SELECT count(*) FROM tenants"))).scalar() == 3
    finally:
        await holder.dispose()
        await other.dispose()


async def test_each_process_counts_how_long_it_held_the_write_lock_and_waited_for_it(tmp_path: Path) -> None:
    """What ``/metrics`` shows as ``flowdeck_sqlite_write_lock_{held,wait}_seconds_total``: a writer that waited
    for another's group counts that wait, the holder counts its hold (at least as long as it kept the lock
    after the other began to wait)."""
    url = f"sqlite+aiosqlite:///{tmp_path / 'f.db'}"
    holder, other = Database(url), Database(url)
    await holder.create_all()
    table = sa.table("tenants", sa.column("id"), sa.column("name"), sa.column("created_at"))
    for db in (holder, other):
        db.counter.reset()
    kept = 0.2
    try:
        holds, other_waits = asyncio.Event(), asyncio.Event()

        async def hold() -> None:
            async with holder.transaction() as conn:
                await conn.execute(sa.insert(table).values(id="a", name="a", created_at=0.0))
                holds.set()
                await other_waits.wait()
                await asyncio.sleep(kept)  # the lock kept this long after the other began to wait

        async def write() -> None:
            async with other.transaction() as conn:
                await conn.execute(sa.insert(table).values(id="b", name="b", created_at=0.0))

        holding = asyncio.create_task(hold())
        await asyncio.wait_for(holds.wait(), 10)
        writing = asyncio.create_task(write())
        observer = WriterLock(f"{tmp_path / 'f.db'}-writer")
        await until(observer.contended, timeout=10, what="the other writer waiting")
        observer.close()
        other_waits.set()
        await asyncio.wait_for(asyncio.gather(holding, writing), 10)

        assert holder.counter.write_lock_held_seconds >= kept
        assert other.counter.write_lock_wait_seconds >= kept
        assert holder.counter.write_lock_wait_seconds < kept  # it took the lock at once
        assert 0 < other.counter.write_lock_held_seconds < holder.counter.write_lock_held_seconds
    finally:
        await holder.dispose()
        await other.dispose()
