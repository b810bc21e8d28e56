"""Runs made by copying a real one (the retention tests and the pruning benchmark): every row of the run,
its instance and its log, inserted again under new ids at other times, many runs per transaction."""

from __future__ import annotations

import uuid
from typing import Any

import sqlalchemy as sa

from flowdeck.storage.database import Database
from flowdeck.storage.tables import instance_logs, instances

__all__ = ("copy_runs",)

_TIMES = ("created_at", "started_at", "completed_at", "updated_at")


async def copy_runs(
    db: Database, instance_id: str, count: int, *, first_at: float, spacing: float, chunk: int = 500
) -> list[str]:
    """``count`` copies of a finished run, the first created at ``first_at`` and each next one ``spacing``
    seconds later (its other times and its log rows' move with it); their ids, oldest first."""
    async with db.read() as conn:
        run = (await conn.execute(sa.select(instances).where(instances.c.id == instance_id))).mappings().one()
        logs = (
            (
                await conn.execute(
                    sa.select(instance_logs)
                    .where(instance_logs.c.instance_id == instance_id)
                    .order_by(instance_logs.c.log_id)
                )
            )
            .mappings()
            .all()
        )
    ids: list[str] = []
    for start in range(0, count, chunk):
        runs: list[dict[str, Any]] = []
        rows: list[dict[str, Any]] = []
        for n in range(start, min(count, start + chunk)):
            new_id = str(uuid.uuid4())
            shift = first_at + n * spacing - run["created_at"]
            copy = dict(run, id=new_id)
            for field in _TIMES:
                if copy[field] is not None:
                    copy[field] += shift
            runs.append(copy)
            for log in logs:
                row = {k: v for k, v in log.items() if k != "log_id"}
                rows.append(row | {"instance_id": new_id, "created_at": log["created_at"] + shift})
            ids.append(new_id)
        async with db.transaction() as conn:
            await conn.execute(instances.insert(), runs)
            await conn.execute(instance_logs.insert(), rows)
    return ids
