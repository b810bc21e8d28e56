"""The notification outbox (``run_notices``): add a notice with the event it announces, claim due ones,
finish or reschedule them. The sending lives in ``flowdeck/notifications``."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa

from flowdeck.storage.database import Connection, Database
from flowdeck.storage.notice_tables import run_notices
from flowdeck.storage.tables import instances

__all__ = ("FAILURE", "SLA_BREACH", "Notice", "NoticeOutbox", "add_notice")

FAILURE = "failure"
SLA_BREACH = "sla_breach"


@dataclass(frozen=True, slots=True)
class Notice:
    id: int
    tenant_id: str
    instance_id: str
    workflow_id: str | None
    event: str
    payload: Any
    attempts: int
    created_at: float


async def add_notice(conn: Connection, instance_id: str, event: str, now: float) -> None:
    """Queue a notice of ``event`` for a production run (test runs notify nobody), in the caller's
    transaction: it exists exactly when the event was committed. What it leads to (an error workflow,
    a URL) is read from the run's workflow version when it is sent."""
    source = sa.select(
        instances.c.tenant_id,
        instances.c.id,
        instances.c.workflow_id,
        sa.literal(event),
        sa.literal(now),
        sa.literal(now),
    ).where(instances.c.id == instance_id, instances.c.is_test.is_(False), instances.c.workflow_id.is_not(None))
    columns = ["tenant_id", "instance_id", "workflow_id", "event", "available_at", "created_at"]
    await conn.execute(run_notices.insert().from_select(columns, source))


class NoticeOutbox:
    def __init__(self, db: Database) -> None:
        self.db = db

    async def claim(self, now: float, lease_seconds: float, limit: int = 20) -> list[Notice]:
        """Lease up to ``limit`` due notices (each to exactly one caller, across processes)."""
        async with self.db.read(snapshot=False) as conn:
            due = (
                await conn.execute(
                    sa.select(run_notices.c.id, run_notices.c.available_at)
                    .where(run_notices.c.available_at <= now)
                    .order_by(run_notices.c.available_at)
                    .limit(limit)
                )
            ).all()
        claimed: list[Notice] = []
        for notice_id, available_at in due:
            async with self.db.transaction() as conn:
                row = (
                    await conn.execute(
                        run_notices.update()
                        .where(run_notices.c.id == notice_id, run_notices.c.available_at == available_at)
                        .values(available_at=now + lease_seconds, attempts=run_notices.c.attempts + 1)
                        .returning(
                            run_notices.c.id,
                            run_notices.c.tenant_id,
                            run_notices.c.instance_id,
                            run_notices.c.workflow_id,
                            run_notices.c.event,
                            run_notices.c.payload,
                            run_notices.c.attempts,
                            run_notices.c.created_at,
                        )
                    )
                ).first()
            if row is not None:
                claimed.append(Notice(*row))
        return claimed

    async def set_payload(self, notice_id: int, payload: Any) -> None:
        async with self.db.transaction() as conn:
            await conn.execute(run_notices.update().where(run_notices.c.id == notice_id).values(payload=payload))

    async def done(self, notice_id: int) -> None:
        async with self.db.transaction() as conn:
            await conn.execute(run_notices.delete().where(run_notices.c.id == notice_id))

    async def retry_at(self, notice_id: int, due: float, error: str) -> None:
        async with self.db.transaction() as conn:
            await conn.execute(
                run_notices.update().where(run_notices.c.id == notice_id).values(available_at=due, last_error=error)
            )

    async def pending(self, instance_id: str | None = None) -> list[Notice]:
        """Notices not sent yet (tests and operators)."""
        stmt = sa.select(
            run_notices.c.id,
            run_notices.c.tenant_id,
            run_notices.c.instance_id,
            run_notices.c.workflow_id,
            run_notices.c.event,
            run_notices.c.payload,
            run_notices.c.attempts,
            run_notices.c.created_at,
        ).order_by(run_notices.c.id)
        if instance_id is not None:
            stmt = stmt.where(run_notices.c.instance_id == instance_id)
        async with self.db.read() as conn:
            return [Notice(*row) for row in await conn.execute(stmt)]
