"""The SQL of webhook secrets (one per workflow, stored hashed; SQLAlchemy Core, both dialects)."""

from __future__ import annotations

from dataclasses import dataclass

import sqlalchemy as sa

from flowdeck.storage.compiled import compile_each
from flowdeck.storage.database import Connection, Database
from flowdeck.storage.tables import workflows
from flowdeck.storage.trigger_tables import workflow_webhooks

__all__ = ("HookTarget", "WebhookRow", "WebhookStore")


@dataclass(frozen=True, slots=True)
class WebhookRow:
    """The secret of a workflow, without the secret: when it was made and last used."""

    created_at: float
    last_used_at: float | None


@dataclass(frozen=True, slots=True)
class HookTarget:
    """What ``POST /hooks/{workflowId}`` needs of a live workflow, whatever its tenant."""

    workflow_id: str
    tenant_id: str
    secret_hash: str | None
    last_used_at: float | None


_p = sa.bindparam
_LIVE = sa.and_(workflows.c.id == _p("p_id"), workflows.c.deleted_at.is_(None))
# Built once: a webhook can be called often, and building a statement costs more than SQLite runs it.
_TARGET = compile_each(  # and compiled: run on the driver
    sa.select(workflows.c.id, workflows.c.tenant_id, workflow_webhooks.c.secret_hash, workflow_webhooks.c.last_used_at)
    .select_from(workflows.outerjoin(workflow_webhooks, workflow_webhooks.c.workflow_id == workflows.c.id))
    .where(_LIVE)
)
_TOUCH = (
    workflow_webhooks.update()
    .where(workflow_webhooks.c.workflow_id == _p("p_id"), workflow_webhooks.c.secret_hash == _p("p_hash"))
    .values(last_used_at=_p("p_now"))
)


class WebhookStore:
    def __init__(self, db: Database) -> None:
        self.db = db

    async def _owned(self, conn: Connection, tenant_id: str, workflow_id: str) -> bool:
        stmt = sa.select(workflows.c.id).where(_LIVE, workflows.c.tenant_id == tenant_id)
        return (await conn.execute(stmt, {"p_id": workflow_id})).first() is not None

    async def get(self, tenant_id: str, workflow_id: str) -> tuple[bool, WebhookRow | None]:
        """(whether the tenant has this live workflow, its secret's row if it has one)."""
        stmt = sa.select(workflow_webhooks.c.created_at, workflow_webhooks.c.last_used_at).where(
            workflow_webhooks.c.workflow_id == workflow_id, workflow_webhooks.c.tenant_id == tenant_id
        )
        async with self.db.read() as conn:
            if not await self._owned(conn, tenant_id, workflow_id):
                return False, None
            row = (await conn.execute(stmt)).first()
        return True, None if row is None else WebhookRow(row[0], row[1])

    async def set_secret(self, tenant_id: str, workflow_id: str, secret_hash: str, now: float) -> bool:
        """Replace the workflow's secret (the old one stops working at once); ``False``: no such workflow."""
        async with self.db.transaction() as conn:
            if not await self._owned(conn, tenant_id, workflow_id):
                return False
            await conn.execute(workflow_webhooks.delete().where(workflow_webhooks.c.workflow_id == workflow_id))
            await conn.execute(
                workflow_webhooks.insert().values(
                    workflow_id=workflow_id, tenant_id=tenant_id, secret_hash=secret_hash, created_at=now
                )
            )
        return True

    async def target(self, workflow_id: str) -> HookTarget | None:
        async with self.db.read(snapshot=False) as conn:
            row = (await conn.execute(_TARGET.on(self.db.is_sqlite), {"p_id": workflow_id})).first()
        return None if row is None else HookTarget(row[0], row[1], row[2], row[3])

    async def touch(self, workflow_id: str, secret_hash: str, now: float) -> None:
        async with self.db.transaction() as conn:
            await conn.execute(_TOUCH, {"p_id": workflow_id, "p_hash": secret_hash, "p_now": now})
