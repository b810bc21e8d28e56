"""What an operator wants to know about the queue: how many jobs are due and how long the oldest has waited."""

from __future__ import annotations

from dataclasses import dataclass

import sqlalchemy as sa

from flowdeck.storage.database import Database
from flowdeck.storage.tables import node_jobs

__all__ = ("QueueStats", "read_queue_stats")

_DUE = sa.select(sa.func.count(), sa.func.min(node_jobs.c.available_at)).where(
    node_jobs.c.available_at <= sa.bindparam("now")
)


@dataclass(frozen=True, slots=True)
class QueueStats:
    due_jobs: int
    """Jobs whose due time has come and that no live lease holds (new, retried, delayed or orphaned)."""
    oldest_due_age: float
    """Seconds since the oldest of them fell due (0 when none is waiting)."""


async def read_queue_stats(db: Database, now: float) -> QueueStats:
    async with db.read() as conn:
        count, oldest = (await conn.execute(_DUE, {"now": now})).one()
    return QueueStats(int(count), 0.0 if oldest is None else max(0.0, now - float(oldest)))
