"""A production run starts on its workflow's latest version even when another process saved or deleted the workflow
since this one last looked: the version a process remembers (engine/latest_versions.py) is checked by the start on
PostgreSQL and read afresh when it is stale, and SQLite's start reads it every time. Both databases; two engines on
one database stand for two processes that do not hear each other's notices."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
import sqlalchemy as sa

from flowdeck.engine.engine import Engine
from flowdeck.storage.database import Database
from flowdeck.storage.tables import instances
from tests.support.graphs import definition, edge, end, node
from tests.support.handlers import make_test_registry


def _version(label: str) -> dict[str, object]:
    nodes = [node("start", "start"), end(params={"saved": label})]
    return definition(nodes, [edge("start", "end")])


@pytest.fixture
async def elsewhere(db: Database) -> AsyncIterator[Engine]:
    """Another process on the same database: it saves and deletes, runs nothing."""
    other = Engine(db, make_test_registry())
    yield other
    await other.stop()


async def test_a_start_after_another_process_saved_runs_the_new_version(
    engine: Engine, elsewhere: Engine, tenant_id: str
) -> None:
    workflow = await engine.create_workflow(tenant_id, _version("first"))
    first = await engine.start_workflow_run(tenant_id, workflow.id)
    assert (await engine.wait_for_run(first, 20)).output == {"saved": "first"}

    saved = await elsewhere.save_workflow(tenant_id, workflow.id, workflow.version, _version("second"))
    second = await engine.start_workflow_run(tenant_id, workflow.id)
    run = await engine.wait_for_run(second, 20)
    assert (run.workflow_version, run.output) == (saved, {"saved": "second"})
    third = await engine.start_workflow_run(tenant_id, workflow.id, version=saved)  # the version now known
    assert (await engine.wait_for_run(third, 20)).output == {"saved": "second"}


async def test_a_start_after_another_process_deleted_the_workflow_is_refused_and_writes_nothing(
    engine: Engine, elsewhere: Engine, tenant_id: str, db: Database
) -> None:
    workflow = await engine.create_workflow(tenant_id, _version("only"))
    assert await elsewhere.delete_workflow(tenant_id, workflow.id)
    with pytest.raises(LookupError, match=workflow.id):
        await engine.start_workflow_run(tenant_id, workflow.id)
    async with db.read() as conn:
        runs = (await conn.execute(sa.select(sa.func.count()).where(instances.c.workflow_id == workflow.id))).scalar()
    assert runs == 0
