"""The examples of "start from an example" run as shipped, on SQLite and PostgreSQL, with the real node handlers."""

from __future__ import annotations

import sqlite3
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from litestar.exceptions import NotFoundException

from flowdeck.api.openapi import ConflictException
from flowdeck.api.services.examples import ExampleService
from flowdeck.api.services.workflows import WorkflowService
from flowdeck.engine.engine import Engine
from flowdeck.examples import DATA_DIR, EXAMPLES
from flowdeck.handlers.data_query import DataQueryHandler
from flowdeck.handlers.python_code import PythonCodeHandler
from flowdeck.handlers.registry import HandlerRegistry, builtin_handlers
from flowdeck.notifications.notifier import Notifier
from flowdeck.queries.secrets import SecretBox
from flowdeck.queries.service import DataService
from flowdeck.queries.store import DataSourceStore
from flowdeck.runtime import build_query_engine
from flowdeck.sandbox.pool import SandboxPool
from flowdeck.settings import Settings
from flowdeck.storage.database import Database
from tests.support.runs import read_outcome

EXPECTED: dict[str, tuple[Any, Any]] = {  # example -> (output for its sample input, output for no input)
    "loop": (
        {"squares": [{"number": n, "square": n * n} for n in (3, 1, 4, 1, 5)], "count": 5},
        {"squares": [{"number": n, "square": n * n} for n in (3, 1, 4, 1, 5)], "count": 5},
    ),
    "condition-delay": (
        {"decision": "approved after a pause", "amount": 250},
        {"decision": "approved after a pause", "amount": 250},
    ),
    "data-query": (
        {"summary": {"orders": 3, "total": 150.15}, "customers": ["Ada", "Linus", "Ken"]},
        {"summary": {"orders": 3, "total": 150.15}, "customers": ["Ada", "Linus", "Ken"]},
    ),
}


@pytest.fixture
async def service(db: Database, tmp_path: Path) -> AsyncIterator[tuple[ExampleService, Engine]]:
    sandbox = SandboxPool(1)
    await sandbox.start()
    data = DataService(
        DataSourceStore(db, SecretBox(None)),
        build_query_engine(Settings(database_url=db.url, sqlite_dirs=(str(tmp_path),))),
    )
    registry = HandlerRegistry(
        [*builtin_handlers(), PythonCodeHandler(sandbox), DataQueryHandler(data.store, data.engine)]
    )
    engine = Engine(db, registry, poll_interval=0.05)
    await engine.start()
    try:
        notifier = Notifier(engine, data.store.secret_box, data.engine.outbound)
        yield ExampleService(WorkflowService(engine, notifier), data), engine
    finally:
        await engine.stop()
        await data.engine.close()
        await sandbox.close()


async def test_every_example_runs_to_completion_with_and_without_its_sample_input(
    service: tuple[ExampleService, Engine],
) -> None:
    examples, engine = service
    tenant_id = await engine.tenants.ensure("newcomer")
    listed = examples.list().items
    assert [e.id for e in listed] == [e.id for e in EXAMPLES] and set(EXPECTED) == {e.id for e in listed}
    for item in listed:
        workflow = await examples.start(tenant_id, item.id)
        assert workflow.version == 1 and workflow.title.startswith("Example: ")
        for run_input, expected in zip((item.input, None), EXPECTED[item.id], strict=True):
            run_id = await engine.start_workflow_run(tenant_id, workflow.id, run_input)
            await engine.wait_for_run(run_id, 30)
            outcome = await read_outcome(engine, run_id)
            assert outcome.run.status == "COMPLETED", (item.id, outcome.run.error, outcome.nodes)
            assert outcome.run.output == expected, item.id


async def test_the_data_example_reads_the_shipped_file_and_reuses_its_source_and_query(
    service: tuple[ExampleService, Engine], tmp_path: Path
) -> None:
    examples, engine = service
    tenant_id = await engine.tenants.ensure("newcomer")
    first = await examples.start(tenant_id, "data-query")
    second = await examples.start(tenant_id, "data-query")
    assert first.id != second.id
    query_ids = {next(n for n in w.nodes if n["id"] == "orders")["config"]["queryId"] for w in (first, second)}
    assert len(query_ids) == 1  # one saved query, made once
    sources = await examples.data.store.list_sources(tenant_id)
    assert [(s.name, s.config["url"]) for s in sources] == [
        ("Example shop (SQLite)", f"sqlite+aiosqlite:///{DATA_DIR / 'shop.sqlite'}")
    ]
    other_tenant = await engine.tenants.ensure("other")
    theirs = await examples.start(other_tenant, "data-query")
    assert next(n for n in theirs.nodes if n["id"] == "orders")["config"]["queryId"] not in query_ids

    elsewhere = tmp_path / "mine.db"
    sqlite3.connect(elsewhere).close()
    await examples.data.update_data_source(
        tenant_id, sources[0].id, {"config": {"url": f"sqlite+aiosqlite:///{elsewhere}"}}
    )
    with pytest.raises(ConflictException, match="rename it"):
        await examples.start(tenant_id, "data-query")
    with pytest.raises(NotFoundException):
        await examples.start(tenant_id, "no-such-example")
