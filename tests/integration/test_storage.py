"""The schema: migrations build what the code expects; versions are immutable and numbered."""

from __future__ import annotations

from pathlib import Path

import pytest
import sqlalchemy as sa

from flowdeck.storage.database import Database
from flowdeck.storage.migrate import upgrade
from flowdeck.storage.schema import metadata
from flowdeck.storage.tenants import TenantStore
from flowdeck.storage.workflows import StaleVersionError, WorkflowStore


async def test_migrations_create_exactly_the_tables_and_indexes_of_the_code(tmp_path: Path) -> None:
    url = f"sqlite+aiosqlite:///{tmp_path / 'migrated.db'}"
    first = await upgrade(url)
    assert first.before is None and first.changed
    again = await upgrade(url)  # idempotent: a second run changes nothing
    assert again.before == again.head == first.head and not again.changed
    db = Database(url)
    async with db.read() as conn:

        def describe(sync_conn: sa.Connection) -> dict[str, set[str]]:
            inspector = sa.inspect(sync_conn)
            return {t: {i["name"] for i in inspector.get_indexes(t)} for t in inspector.get_table_names()}

        migrated = await conn.run_sync(describe)
    await db.dispose()
    expected = {t.name: {i.name for i in t.indexes} for t in metadata.sorted_tables}
    migrated.pop("alembic_version")
    assert migrated == expected


async def test_saving_a_workflow_makes_a_new_immutable_version(db: Database) -> None:
    tenant = await TenantStore(db).ensure("acme")
    store = WorkflowStore(db)
    created = await store.create(tenant, {"title": "One", "nodes": []})
    assert created.version == 1
    assert await store.save_version(tenant, created.id, 1, {"title": "Two", "nodes": []}) == 2
    with pytest.raises(StaleVersionError) as stale:
        await store.save_version(tenant, created.id, 1, {"title": "Stale tab", "nodes": []})
    assert stale.value.latest == 2
    assert (await store.get(tenant, created.id, 1)).definition["title"] == "One"  # type: ignore[union-attr]
    assert (await store.get(tenant, created.id)).title == "Two"  # type: ignore[union-attr]
    other = await TenantStore(db).ensure("other")
    assert await store.get(other, created.id) is None  # another tenant's workflow does not exist for it
