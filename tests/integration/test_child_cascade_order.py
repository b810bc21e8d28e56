"""A run that ends cancels its unfinished children in the order it called them, on both databases: the
cascade's rows are then written in one order everywhere (the generated equivalence test found PostgreSQL
handing them over in table order, which an update of the first child had changed)."""

from __future__ import annotations

import uuid
from typing import Any

import sqlalchemy as sa

from flowdeck.storage.children import ChildRuns
from flowdeck.storage.database import Database
from flowdeck.storage.tables import instances, tenants


def run_row(tenant_id: str, created_at: float, status: str, parent: str | None = None) -> dict[str, Any]:
    return {
        "id": str(uuid.uuid4()),
        "tenant_id": tenant_id,
        "is_test": False,
        "status": status,
        "version": 1,
        "trigger": "workflow" if parent else "api",
        "created_at": created_at,
        "updated_at": created_at,
        "parent_instance_id": parent,
        "parent_node_id": "call" if parent else None,
        "parent_iteration": "" if parent else None,
    }


async def test_the_children_to_cancel_come_in_the_order_they_were_called(db: Database) -> None:
    tenant_id = str(uuid.uuid4())
    caller = run_row(tenant_id, 1.0, "FAILED")
    first = run_row(tenant_id, 2.0, "PENDING", caller["id"])
    second = run_row(tenant_id, 3.0, "RUNNING", caller["id"])
    async with db.transaction() as conn:
        await conn.execute(sa.insert(tenants).values(id=tenant_id, name=f"t-{tenant_id}", created_at=0.0))
        for row in (caller, first, second):
            await conn.execute(sa.insert(instances).values(**row))
    async with db.transaction() as conn:  # a new version of the first child's row, after the second's
        await conn.execute(sa.update(instances).where(instances.c.id == first["id"]).values(status="RUNNING"))

    children = ChildRuns(db)

    assert await children.unfinished_children(caller["id"]) == [first["id"], second["id"]]
    assert await children.orphans() == [(first["id"], caller["id"]), (second["id"], caller["id"])]
