"""Reading back what a live update left out: the output or error of a node attempt or a run.

A fan-out transport with a size limit (PostgreSQL NOTIFY: 8,000 bytes) sends large updates without
their output; the receiving process reads it from the log or the instance row, which the sender
committed before it published.
"""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa

from flowdeck.domain.statuses import EventType
from flowdeck.storage.database import Database
from flowdeck.storage.tables import instance_logs, instances

__all__ = ("node_result", "run_result")

_RESULT_EVENTS = (EventType.NODE_COMPLETED.value, EventType.NODE_FAILED.value)


async def node_result(db: Database, instance_id: str, node_id: str, iteration: str, attempt: int) -> tuple[Any, Any]:
    """(output, error) of one attempt, from its NODE_COMPLETED or NODE_FAILED row ((None, None) if absent)."""
    query = (
        sa.select(instance_logs.c.payload, instance_logs.c.error_message)
        .where(
            instance_logs.c.instance_id == instance_id,
            instance_logs.c.node_id == node_id,
            instance_logs.c.iteration == iteration,
            instance_logs.c.node_attempt == attempt,
            instance_logs.c.event_type.in_(_RESULT_EVENTS),
        )
        .order_by(instance_logs.c.log_id.desc())
        .limit(1)
    )
    async with db.read() as conn:
        row = (await conn.execute(query)).first()
    if row is None:
        return None, None
    payload = row.payload if isinstance(row.payload, dict) else {}
    return payload.get("output"), row.error_message


async def run_result(db: Database, instance_id: str) -> tuple[Any, Any]:
    """(output, error) of a run, from its instance row."""
    async with db.read() as conn:
        row = (
            await conn.execute(sa.select(instances.c.output, instances.c.error).where(instances.c.id == instance_id))
        ).first()
    return (None, None) if row is None else (row.output, row.error)
