"""The schema: migrations build what the code expects; versions are immutable and numbered."""

from __future__ import annotations

from pathlib import Path

import pytest
import sqlalchemy as sa

from flowdeck.domain.statuses import EventType
from flowdeck.engine.engine import Engine
from flowdeck.storage.database import Database
from flowdeck.storage.jobs import NewJob
from flowdeck.storage.migrate import upgrade
from flowdeck.storage.records import Job, LogEvent
from flowdeck.storage.schema import metadata, node_jobs
from flowdeck.storage.statements import JOB_COLUMNS
from flowdeck.storage.tenants import TenantStore
from flowdeck.storage.workflows import StaleVersionError, WorkflowStore
from tests.support.graphs import linear


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


async def test_adding_jobs_returns_the_rows_stored_and_nothing_for_a_node_already_queued(engine: Engine) -> None:
    """SQLite answers without RETURNING: what it returns is held equal to what was stored."""
    tenant_id = await engine.tenants.ensure("acme")
    instance_id = await engine.orchestrator.start_run(
        tenant_id=tenant_id, graph=engine.plans.build_graph(linear(1)), run_input=None
    )
    await engine.wait_for_run(instance_id, 20)
    leased = NewJob(
        instance_id,
        "a",
        "0",
        attempt=2,
        retry_base=2,
        lease_owner="w1",
        lease_seconds=30.0,
        tenant_id=tenant_id,
        priority=70,
    )
    due = NewJob(instance_id, "b", "", delay_seconds=5.0, tenant_id=tenant_id)
    async with engine.state.transaction() as tx:
        added = await tx.jobs.add([leased, due])
        again = await tx.jobs.add([due])
    async with engine.db.read() as conn:
        query = sa.select(*JOB_COLUMNS).where(node_jobs.c.instance_id == instance_id).order_by(node_jobs.c.id)
        stored = [Job(*row) for row in await conn.execute(query)]
    assert added == stored and again == []
    assert [(j.node_id, j.lease_owner, j.attempt, j.priority) for j in added] == [
        ("a", "w1", 2, 70),
        ("b", None, 1, 50),
    ]
    assert added[0].available_at - added[1].available_at == pytest.approx(25.0)


async def test_appending_to_the_log_says_which_rows_are_new(engine: Engine) -> None:
    """A duplicate node event is a no-op the engine must recognise (SQLite answers without RETURNING)."""
    tenant_id = await engine.tenants.ensure("acme")
    instance_id = await engine.orchestrator.start_run(
        tenant_id=tenant_id, graph=engine.plans.build_graph(linear(1)), run_input=None
    )
    await engine.wait_for_run(instance_id, 20)
    extra = LogEvent(instance_id, EventType.NODE_SKIPPED, "x", node_status="SKIPPED", node_attempt=7)
    other = LogEvent(instance_id, EventType.NODE_SKIPPED, "y", node_status="SKIPPED", node_attempt=7)
    async with engine.state.transaction() as tx:
        log_id = await tx.log_event(extra)
        again = await tx.log_event(extra)
        new_nodes = await tx.log_event_bulk([extra, other])
    rows = await engine.state.read_log(instance_id)
    assert log_id == max(r.log_id for r in rows if r.node_id == "x") and again is None
    assert new_nodes == ["y"]
    assert [r.node_id for r in rows if r.node_attempt == 7] == ["x", "y"]
