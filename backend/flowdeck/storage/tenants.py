"""Tenants: every workflow and run belongs to one."""

from __future__ import annotations

import time
import uuid

import sqlalchemy as sa

from flowdeck.domain.statuses import RunStatus
from flowdeck.storage.database import Connection, Database
from flowdeck.storage.tables import instances, tenants

__all__ = ("TenantStore", "count_active_runs")

_ACTIVE = (RunStatus.PENDING.value, RunStatus.RUNNING.value)


async def count_active_runs(conn: Connection, tenant_id: str, up_to: int) -> int:
    """How many of the tenant's runs are PENDING or RUNNING, counted no further than ``up_to``: the index
    on ``(tenant_id, status)`` answers it without reading a run, and the bound keeps it short."""
    active = (
        sa.select(sa.literal(1))
        .where(instances.c.tenant_id == tenant_id, instances.c.status.in_(_ACTIVE))
        .limit(up_to)
        .subquery()
    )
    return int((await conn.execute(sa.select(sa.func.count()).select_from(active))).scalar_one())


class TenantStore:
    def __init__(self, db: Database) -> None:
        self.db = db

    async def ensure(self, name: str) -> str:
        """The id of the tenant called ``name``, created if it does not exist yet."""
        async with self.db.transaction() as conn:
            existing = (await conn.execute(sa.select(tenants.c.id).where(tenants.c.name == name))).scalar_one_or_none()
            if existing is not None:
                return str(existing)
            tenant_id = str(uuid.uuid4())
            await conn.execute(
                self.db.insert(tenants).values(id=tenant_id, name=name, created_at=time.time()).on_conflict_do_nothing()
            )
        async with self.db.read() as conn:
            return str((await conn.execute(sa.select(tenants.c.id).where(tenants.c.name == name))).scalar_one())

    async def active_runs(self, tenant_id: str, up_to: int) -> int:
        """``count_active_runs`` on a connection of its own."""
        async with self.db.read(snapshot=False) as conn:
            return await count_active_runs(conn, tenant_id, up_to)
