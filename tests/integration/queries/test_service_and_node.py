"""The service API and the ``dataQuery`` node, on SQLite and PostgreSQL storage, end to end through the engine."""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from flowdeck.domain.errors import NodeError
from flowdeck.engine.engine import Engine
from flowdeck.handlers.data_query import DataQueryHandler
from flowdeck.handlers.registry import HandlerRegistry, builtin_handlers
from flowdeck.queries.engine import QueryEngine
from flowdeck.queries.errors import NotFoundError, QueryValidationError
from flowdeck.queries.secrets import SecretBox
from flowdeck.queries.service import DataService
from flowdeck.queries.store import DataSourceStore
from flowdeck.storage.database import Database
from flowdeck.storage.tenants import TenantStore
from tests.integration.queries.conftest import LOCAL
from tests.integration.queries.support import node_helpers
from tests.support.graphs import definition, edge, end, node
from tests.support.runs import run_to_end


@dataclass
class Setup:
    service: DataService
    handler: DataQueryHandler
    acme: str
    other: str


@pytest.fixture
async def setup(db: Database, sqlite_data: Path) -> AsyncIterator[Setup]:
    tenants = TenantStore(db)
    store = DataSourceStore(db, SecretBox("a-test-secret-key"))
    async with QueryEngine(sqlite_dirs=[str(sqlite_data.parent)], http_allow=LOCAL, own_database_url=db.url) as engine:
        yield Setup(DataService(store, engine), DataQueryHandler(store, engine), await tenants.ensure("acme"),
                    await tenants.ensure("other"))  # fmt: skip


async def test_the_api_never_returns_secret_values(setup: Setup, http_base: str) -> None:
    svc, acme = setup.service, setup.acme
    src = await svc.create_data_source(acme, {"name": "api", "kind": "http", "config": {"baseUrl": http_base},
                                              "secrets": {"X-Api-Key": "key-9f8e7d"}})  # fmt: skip
    assert src["secrets"] == {"X-Api-Key": "set"}
    q = await svc.create_query(acme, {"name": "whoami", "dataSourceId": src["id"], "kind": "http",
                                      "parameters": ["id"], "method": "GET", "path": "/echo/{{ id }}"})  # fmt: skip
    assert (q["kind"], q["method"], q["path"], q["query"], q["headers"], q["body"]) == (
        "http",
        "GET",
        "/echo/{{ id }}",
        {},
        {},
        None,
    )
    preview = await svc.preview(acme, q["id"], {"id": 5})
    assert preview["body"]["path"] == "/echo/5" and preview["body"]["headers"]["x-api-key"] == "key-9f8e7d"
    # a form sends the mask back: the secret stays; null removes it
    edited = await svc.update_data_source(acme, src["id"], {**src, "name": "API", "secrets": {"X-Api-Key": "set"}})
    assert (await svc.preview(acme, q["id"], {"id": 5}))["body"]["headers"]["x-api-key"] == "key-9f8e7d"
    answers = [src, edited, await svc.get_data_source(acme, src["id"]), await svc.list_data_sources(acme)]
    assert "key-9f8e7d" not in json.dumps(answers)
    await svc.update_data_source(acme, src["id"], {"secrets": {"X-Api-Key": None}})
    assert "x-api-key" not in (await svc.preview(acme, q["id"], {"id": 5}))["body"]["headers"]
    with pytest.raises(QueryValidationError, match="the kind of a data source cannot change"):
        await svc.update_data_source(acme, src["id"], {"kind": "sql"})


async def test_crud_is_tenant_scoped_and_paginated(setup: Setup, sqlite_data: Path) -> None:
    svc, acme, other = setup.service, setup.acme, setup.other
    ids = [(await svc.create_data_source(acme, {"name": f"db{i}", "kind": "sql", "config": {"url": f"sqlite:///{sqlite_data}"}}))["id"]
           for i in range(5)]  # fmt: skip
    first = await svc.list_data_sources(acme, limit=2)
    second = await svc.list_data_sources(acme, limit=2, cursor=first["nextCursor"])
    third = await svc.list_data_sources(acme, limit=2, cursor=second["nextCursor"])
    assert [s["name"] for s in first["items"] + second["items"] + third["items"]] == [f"db{i}" for i in range(5)]
    assert third["nextCursor"] is None
    for call in (svc.get_data_source(other, ids[0]), svc.delete_data_source(other, ids[0]),
                 svc.update_data_source(other, ids[0], {"name": "x"}), svc.preview(other, ids[0], {})):  # fmt: skip
        with pytest.raises(NotFoundError):
            await call
    q = await svc.create_query(
        acme, {"name": "count", "dataSourceId": ids[0], "sql": "SELECT count(*) AS n FROM orders"}
    )
    assert (await svc.list_queries(acme, data_source_id=ids[0]))["items"] == [q]
    assert (await svc.list_queries(other))["items"] == []
    renamed = await svc.update_query(acme, q["id"], {"name": "order count"})
    assert (renamed["name"], renamed["sql"]) == ("order count", "SELECT count(*) AS n FROM orders")
    assert (await svc.preview(acme, q["id"]))["rows"] == [{"n": 25}]
    with pytest.raises(QueryValidationError, match="unknown field"):
        await svc.create_query(acme, {"name": "x", "dataSourceId": ids[0], "sql": "SELECT 1", "sqll": "typo"})
    await svc.delete_query(acme, q["id"])
    await svc.delete_data_source(acme, ids[0])
    with pytest.raises(NotFoundError):
        await svc.get_query(acme, q["id"])


async def test_the_handler_runs_the_query_of_the_runs_tenant(setup: Setup, sqlite_data: Path) -> None:
    svc, handler = setup.service, setup.handler
    src = await svc.create_data_source(
        setup.acme, {"name": "shop", "kind": "sql", "config": {"url": f"sqlite:///{sqlite_data}"}}
    )
    sql = "SELECT id FROM orders WHERE customer = :c ORDER BY id LIMIT 2"
    q = await svc.create_query(
        setup.acme, {"name": "by customer", "dataSourceId": src["id"], "parameters": ["c"], "sql": sql}
    )
    config = {"queryId": q["id"], "args": {"c": "c2"}}
    assert handler.config_issues(config) == []
    result = await handler.execute(config, {}, node_helpers(setup.acme))
    assert (result.next_handle, result.output["rows"]) == ("success", [{"id": 2}, {"id": 5}])
    with pytest.raises(NodeError) as foreign:
        await handler.execute(config, {}, node_helpers(setup.other))
    assert not foreign.value.retryable and foreign.value.error_type == "NotFound"
    with pytest.raises(NodeError) as missing:
        await handler.execute({"queryId": q["id"], "args": {}}, {}, node_helpers(setup.acme))
    assert not missing.value.retryable and "missing argument 'c'" in missing.value.message


def _flow(query_id: str, args: dict[str, Any], **fields: Any) -> dict[str, Any]:
    return definition(
        [node("start", "start"), node("q", "dataQuery", config={"queryId": query_id, "args": args}, **fields),
         end(params={"result": "{{ ctx.q }}"}), end("failed", params={"error": "{{ ctx.q.error.message }}"})],
        [edge("start", "q"), edge("q", "end", "success"), edge("q", "failed", "error")],
    )  # fmt: skip


async def test_end_to_end_runs_retry_connection_failures_only(setup: Setup, db: Database, http_base: str) -> None:
    svc, acme = setup.service, setup.acme
    engine = Engine(db, HandlerRegistry([*builtin_handlers(), setup.handler]), lease_seconds=2.0, poll_interval=0.05)
    await engine.start()
    try:
        src = await svc.create_data_source(acme, {"name": "api", "kind": "http", "config": {"baseUrl": http_base}})
        flaky = await svc.create_query(acme, {"name": "flaky", "dataSourceId": src["id"], "parameters": ["key"],
                                              "path": "/flaky", "query": {"key": "{{ key }}", "fail": 2}})  # fmt: skip
        retry = {"maxAttempts": 3, "backoffSeconds": 0.05, "maxBackoffSeconds": 0.1}
        key = uuid.uuid4().hex
        ok = await run_to_end(
            engine, acme, _flow(flaky["id"], {"key": "{{ ctx.input.key }}"}, retry=retry), {"key": key}
        )
        assert ok.run.status == "COMPLETED", ok.run.error
        assert ok.nodes["q"].attempt == 3
        assert ok.run.output["result"]["body"] == {"attempt": 3}
        missing = await svc.create_query(acme, {"name": "missing", "dataSourceId": src["id"], "path": "/status/404"})
        bad = await run_to_end(engine, acme, _flow(missing["id"], {}, retry=retry))
        assert bad.run.status == "COMPLETED", bad.run.error
        assert bad.count("NODE_FAILED", "q") == 1  # a 4xx is not retried
        assert bad.run.output["error"].startswith("saved query 'missing' (GET /status/404): HTTP 404")
        problems = engine.validate(_flow("", {"not an identifier": 1}))
        assert {(p.node_id, p.path) for p in problems} >= {
            ("q", "config.queryId"),
            ("q", "config.args.not an identifier"),
        }
    finally:
        await engine.stop()
