"""SLA breaches (SPEC §2 ``options.slaSeconds``): a run still RUNNING ``slaSeconds`` after it started is
marked once, announced and notified; it goes on running.

A run with an SLA gets ``instances.sla_at`` when it starts; the worker's sweep (every second) asks for
the RUNNING runs whose ``sla_at`` passed (an indexed query on ``(status, sla_at)``). Exactly once across
processes: the mark is one ``UPDATE … WHERE sla_breached_at IS NULL RETURNING``, so of several sweeps
reaching the same run only one gets the row back (on PostgreSQL the row lock makes the second re-check
its condition; SQLite is one process). The log's unique index cannot be the guard here: run-level rows
have a NULL ``nodeId``, and NULLs never collide. The ``RUN_SLA_BREACHED`` row and the notice are
written in the same transaction as the mark. The instance ``version`` is left alone: a breach is no
scheduling decision, so no decision's compare-and-swap loses to it.
"""

from __future__ import annotations

import sqlalchemy as sa

from flowdeck.domain.statuses import EventType, RunStatus
from flowdeck.engine.publisher import Publisher, RunUpdate
from flowdeck.storage.notices import SLA_BREACH, add_notice
from flowdeck.storage.records import LogEvent
from flowdeck.storage.state import StateManager
from flowdeck.storage.tables import instances

__all__ = ("arm_sla", "mark_breaches")


async def arm_sla(state: StateManager, instance_id: str, sla_seconds: float) -> None:
    """Set when the run's SLA passes (right after its creation: ``started_at + sla_seconds``)."""
    async with state.db.transaction() as conn:
        await conn.execute(
            instances.update().where(instances.c.id == instance_id).values(sla_at=instances.c.started_at + sla_seconds)
        )


async def mark_breaches(state: StateManager, publisher: Publisher, now: float, limit: int = 100) -> list[str]:
    """Mark the RUNNING runs past their SLA (those no other process marked); returns their ids."""
    updates: list[RunUpdate] = []
    due = (
        sa.select(instances.c.id)
        .where(
            instances.c.status == RunStatus.RUNNING.value,
            instances.c.sla_at <= now,
            instances.c.sla_breached_at.is_(None),
        )
        .limit(limit)
    )
    async with state.db.read(snapshot=False) as conn:  # the common case: nothing due, no write transaction
        ids = list((await conn.execute(due)).scalars())
    if not ids:
        return []
    async with state.transaction() as tx:
        rows = (
            await tx.conn.execute(
                instances.update()
                .where(
                    instances.c.id.in_(ids),
                    instances.c.status == RunStatus.RUNNING.value,
                    instances.c.sla_breached_at.is_(None),
                )
                .values(sla_breached_at=now, updated_at=now)
                .returning(instances.c.id, instances.c.sla_at - instances.c.started_at)
            )
        ).all()
        for instance_id, sla_seconds in rows:
            payload = {"slaSeconds": sla_seconds, "at": now}
            await tx.log_event(
                LogEvent(instance_id, EventType.RUN_SLA_BREACHED, node_status=RunStatus.RUNNING.value, payload=payload)
            )
            await add_notice(tx.conn, instance_id, SLA_BREACH, now)
            updates.append(RunUpdate(instance_id, RunStatus.RUNNING, now, sla_seconds=float(sla_seconds)))
    if updates:
        publisher.publish(list(updates))
    return [u.instance_id for u in updates]
