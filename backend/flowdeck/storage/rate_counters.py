"""Rate-limit counters in the database (``rate_counters``), shared by every process.

``hit`` counts one attempt under each of its keys and answers the counts *including* it, in one
statement (an upsert: concurrent attempts on one key queue on its row, so no two see the same count).
A caller compares the count with its limit *after* counting: with a limit of 10, 40 parallel attempts
get the counts 1..40 and only 10 go on. Each key counts in a fixed window that starts with its first
attempt; the first attempt after the window's end starts a new one.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

import sqlalchemy as sa

from flowdeck.storage.account_tables import rate_counters
from flowdeck.storage.database import Database

__all__ = ("Count", "RateCounters")

_PRUNE_EVERY: Final = 60.0
"""Counters whose window ended are deleted at most this often (seconds) by one process."""


@dataclass(frozen=True, slots=True)
class Count:
    count: int
    """Attempts in the key's window, this one included."""
    resets_at: float
    """When the window ends (epoch seconds)."""


class RateCounters:
    def __init__(self, db: Database) -> None:
        self.db = db
        self._pruned_at = 0.0

    async def hit(self, windows: Mapping[str, float], now: float) -> dict[str, Count]:
        """Count one attempt under each key (``key -> window seconds``); answer each key's count."""
        table = rate_counters
        insert = self.db.insert(table).values(
            [{"key": key, "count": 1, "resets_at": now + window} for key, window in windows.items()]
        )
        ended = table.c.resets_at <= now
        stmt = insert.on_conflict_do_update(
            index_elements=[table.c.key],
            set_={
                "count": sa.case((ended, 1), else_=table.c.count + 1),
                "resets_at": sa.case((ended, insert.excluded.resets_at), else_=table.c.resets_at),
            },
        ).returning(table.c.key, table.c.count, table.c.resets_at)
        async with self.db.transaction() as conn:
            rows = (await conn.execute(stmt)).all()
        return {key: Count(int(count), float(resets_at)) for key, count, resets_at in rows}

    async def give_back(self, key: str) -> None:
        """Uncount one attempt of ``key`` (it turned out not to count, e.g. a correct password)."""
        table = rate_counters
        stmt = table.update().where(table.c.key == key, table.c.count > 0).values(count=table.c.count - 1)
        async with self.db.transaction() as conn:
            await conn.execute(stmt)

    async def clear(self, key: str) -> None:
        async with self.db.transaction() as conn:
            await conn.execute(rate_counters.delete().where(rate_counters.c.key == key))

    async def prune(self, now: float) -> None:
        """Delete the counters whose window ended (at most once a minute per process)."""
        if now - self._pruned_at < _PRUNE_EVERY:
            return
        self._pruned_at = now
        async with self.db.transaction() as conn:
            await conn.execute(rate_counters.delete().where(rate_counters.c.resets_at <= now))
