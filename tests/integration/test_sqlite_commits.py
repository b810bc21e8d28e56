"""SQLite commits (docs/engine.md "Durable commits and group commit"): FULL by default, NORMAL on request;
write transactions that queue behind a commit share the next one, and one's failure is its own."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
import sqlalchemy as sa

from flowdeck.runtime import open_runtime
from flowdeck.settings import Settings
from flowdeck.storage.database import Database
from flowdeck.storage.tables import tenants


async def synchronous_of(db: Database) -> int:
    async with db.read() as conn:
        return int((await conn.execute(sa.text("PRAGMA synchronous"))).scalar_one())


async def test_a_running_flowdeck_commits_durably_unless_told_otherwise(tmp_path: Path) -> None:
    assert Settings.from_env({}).sqlite_synchronous == "FULL"
    with pytest.raises(ValueError, match="FLOWDECK_SQLITE_SYNCHRONOUS"):
        Settings.from_env({"FLOWDECK_SQLITE_SYNCHRONOUS": "OFF"})
    for value, pragma in (("", 2), ("normal", 1)):  # SQLite's codes: NORMAL 1, FULL 2
        env = {"FLOWDECK_DATABASE_URL": f"sqlite+aiosqlite:///{tmp_path / 'flowdeck.db'}"}
        if value:
            env["FLOWDECK_SQLITE_SYNCHRONOUS"] = value
        async with open_runtime(Settings.from_env(env), with_worker=False, with_scheduler=False) as runtime:
            assert await synchronous_of(runtime.db) == pragma


async def test_queued_writes_share_a_commit_and_a_failure_rolls_back_only_its_own(tmp_path: Path) -> None:
    db = Database(f"sqlite+aiosqlite:///{tmp_path / 'flowdeck.db'}")
    await db.create_all()
    try:

        async def write(name: str, fail: bool = False) -> None:
            async with db.transaction() as conn:
                await conn.execute(tenants.insert().values(id=name, name=name, created_at=0))
                if fail:
                    raise RuntimeError(f"{name} changed its mind")

        db.counter.reset()
        results = await asyncio.gather(*(write(f"t{i}", fail=i == 3) for i in range(8)), return_exceptions=True)
        assert [type(r).__name__ for r in results] == ["NoneType"] * 3 + ["RuntimeError"] + ["NoneType"] * 4
        assert db.counter.commits < 8  # the writes that queued behind the first commit shared the next
        other = Database(f"sqlite+aiosqlite:///{tmp_path / 'flowdeck.db'}")  # what is on disk
        try:
            async with other.read() as conn:
                names = sorted((await conn.execute(sa.select(tenants.c.name))).scalars())
        finally:
            await other.dispose()
        assert names == ["t0", "t1", "t2", "t4", "t5", "t6", "t7"]
    finally:
        await db.dispose()


async def test_a_read_sees_one_snapshot_and_the_next_read_sees_what_committed_since(tmp_path: Path) -> None:
    db = Database(f"sqlite+aiosqlite:///{tmp_path / 'flowdeck.db'}")
    await db.create_all()

    async def add(name: str) -> None:
        async with db.transaction() as conn:
            await conn.execute(tenants.insert().values(id=name, name=name, created_at=0))

    count = sa.select(sa.func.count()).select_from(tenants)
    try:
        await add("t1")
        async with db.read() as reader:
            before = (await reader.execute(count)).scalar_one()
            await add("t2")  # commits while the read is open
            assert (await reader.execute(count)).scalar_one() == before == 1  # the same snapshot
        async with db.read(snapshot=False) as reader:
            assert (await reader.execute(count)).scalar_one() == 2
        async with db.read() as reader:
            assert (await reader.execute(count)).scalar_one() == 2
    finally:
        await db.dispose()
