"""Tenants: every workflow and run belongs to one."""

from __future__ import annotations

import time
import uuid

import sqlalchemy as sa

from flowdeck.storage.database import Database
from flowdeck.storage.tables import tenants

__all__ = ("TenantStore",)


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
