"""The ``http`` node end to end through the engine, on SQLite and PostgreSQL storage, against a local server."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import pytest

from flowdeck.engine.engine import Engine
from flowdeck.handlers.http_request import HttpRequestHandler
from flowdeck.handlers.registry import HandlerRegistry, builtin_handlers
from flowdeck.queries.engine import QueryEngine
from flowdeck.queries.secrets import SecretBox
from flowdeck.queries.service import DataService
from flowdeck.queries.store import DataSourceStore
from flowdeck.storage.database import Database
from flowdeck.storage.tenants import TenantStore
from tests.integration.queries.conftest import LOCAL
from tests.integration.queries.support import closed_port
from tests.support.graphs import definition, edge, end, node
from tests.support.runs import Outcome, run_to_end

RETRY = {"maxAttempts": 3, "backoffSeconds": 0.05, "maxBackoffSeconds": 0.1}


@dataclass
class Setup:
    engine: Engine
    data: DataService
    acme: str
    other: str


async def _setup(db: Database, allow: tuple[str, ...]) -> AsyncIterator[Setup]:
    tenants = TenantStore(db)
    store = DataSourceStore(db, SecretBox("a-test-secret-key"))
    async with QueryEngine(http_allow=allow) as queries:
        registry = HandlerRegistry([*builtin_handlers(), HttpRequestHandler(store, queries)])
        engine = Engine(db, registry, lease_seconds=2.0, poll_interval=0.05)
        await engine.start()
        try:
            acme, other = await tenants.ensure("acme"), await tenants.ensure("other")
            yield Setup(engine, DataService(store, queries), acme, other)
        finally:
            await engine.stop()


@pytest.fixture
async def setup(db: Database) -> AsyncIterator[Setup]:
    """FLOWDECK_HTTP_ALLOW=127.0.0.1: the test server may be reached."""
    async for value in _setup(db, LOCAL):
        yield value


@pytest.fixture
async def guarded(db: Database) -> AsyncIterator[Setup]:
    """No FLOWDECK_HTTP_ALLOW: the operator's default."""
    async for value in _setup(db, ()):
        yield value


def _flow(config: dict[str, Any], **fields: Any) -> dict[str, Any]:
    return definition(
        [node("start", "start"), node("call", "http", config=config, **fields),
         end(params={"result": "{{ ctx.call }}"}), end("failed", params={"error": "{{ ctx.call.error }}"})],
        [edge("start", "call"), edge("call", "end", "success"), edge("call", "failed", "error")],
    )  # fmt: skip


async def _run(s: Setup, config: dict[str, Any], run_input: Any = None, **fields: Any) -> Outcome:
    outcome = await run_to_end(s.engine, s.acme, _flow(config, **fields), run_input)
    assert outcome.run.status == "COMPLETED", outcome.run.error
    return outcome


async def test_get_with_templated_query_and_headers(setup: Setup, http_base: str) -> None:
    config = {"url": http_base + "/orders/{{ ctx.input.id }}", "headers": {"X-Trace": "t-{{ ctx.input.id }}"},
              "query": {"limit": "{{ ctx.input.limit }}", "tag": ["a", "b"]}}  # fmt: skip
    outcome = await _run(setup, config, {"id": 7, "limit": 5})
    result = outcome.run.output["result"]
    assert result["status"] == 200 and result["headers"]["x-server"] == "test"
    body = result["body"]
    assert (body["method"], body["path"], body["query"]) == ("GET", "/orders/7", {"limit": "5", "tag": ["a", "b"]})
    assert body["headers"]["x-trace"] == "t-7"


async def test_post_sends_json_or_a_string_body(setup: Setup, http_base: str) -> None:
    config = {"method": "POST", "url": http_base + "/items", "body": {"id": "{{ ctx.input.id }}", "tags": ["x"]}}
    body = (await _run(setup, config, {"id": 3})).run.output["result"]["body"]
    assert body["method"] == "POST" and body["headers"]["content-type"] == "application/json"
    assert body["body"].replace(" ", "") == '{"id":3,"tags":["x"]}'  # the number kept its type
    config = {"method": "put", "url": http_base + "/items", "body": "plain {{ ctx.input.id }}"}
    body = (await _run(setup, config, {"id": 3})).run.output["result"]["body"]
    assert (body["method"], body["body"]) == ("PUT", "plain 3")


async def test_a_json_answer_is_parsed_and_text_stays_text(setup: Setup, http_base: str) -> None:
    text = (await _run(setup, {"url": http_base + "/text"})).run.output["result"]
    assert text["body"] == "héllo" and text["headers"]["content-type"].startswith("text/plain")
    json_body = (await _run(setup, {"url": http_base + "/json"})).run.output["result"]["body"]
    assert isinstance(json_body, dict) and json_body["path"] == "/json"


async def test_a_non_2xx_answer_fails_the_node_unless_fail_on_status_is_off(setup: Setup, http_base: str) -> None:
    failed = await _run(setup, {"url": http_base + "/status/404"}, retry=RETRY)
    error = failed.run.output["error"]
    assert error["type"] == "HTTPError" and error["status"] == 404
    assert error["message"] == f"GET {http_base}/status/404: HTTP 404 Not Found: status 404"
    assert failed.count("NODE_FAILED", "call") == 1  # a 4xx is not retried
    assert failed.status_of("failed") == "COMPLETED" and failed.status_of("end") == "SKIPPED"
    kept = await _run(setup, {"url": http_base + "/status/404", "failOnStatus": False})
    assert kept.run.output["result"] == {
        "status": 404,
        "headers": kept.run.output["result"]["headers"],
        "body": "status 404",
    }
    assert kept.status_of("end") == "COMPLETED" and kept.status_of("failed") == "SKIPPED"


async def test_5xx_is_retried_by_the_nodes_policy(setup: Setup, http_base: str) -> None:
    config = {"url": http_base + "/flaky", "query": {"key": uuid.uuid4().hex, "fail": 2}}
    outcome = await _run(setup, config, retry=RETRY)
    assert outcome.nodes["call"].attempt == 3 and outcome.run.output["result"]["body"] == {"attempt": 3}


async def test_a_connection_failure_is_retried_then_takes_error(setup: Setup) -> None:
    outcome = await _run(setup, {"url": f"http://127.0.0.1:{closed_port()}/x"}, retry=RETRY)
    assert outcome.count("NODE_FAILED", "call") == 3 and outcome.nodes["call"].attempt == 3
    error = outcome.run.output["error"]
    assert error["type"] == "ConnectionError" and error["message"].startswith("cannot reach http://127.0.0.1:")


async def test_a_data_source_gives_the_base_url_headers_and_secrets(setup: Setup, http_base: str) -> None:
    src = await setup.data.create_data_source(setup.acme, {
        "name": "shop api", "kind": "http", "config": {"baseUrl": http_base + "/api/v2", "headers": {"X-Team": "a"}},
        "secrets": {"Authorization": "Bearer s3cr3t"}})  # fmt: skip
    config = {"url": "/orders/{{ ctx.input.id }}", "dataSourceId": src["id"], "headers": {"X-Call": "1"}}
    outcome = await _run(setup, config, {"id": 9})
    body = outcome.run.output["result"]["body"]
    assert body["path"] == "/api/v2/orders/9"
    assert (body["headers"]["authorization"], body["headers"]["x-team"], body["headers"]["x-call"]) == (
        "Bearer s3cr3t",
        "a",
        "1",
    )
    # an absolute URL would send the source's secrets elsewhere: refused when saved, and at run time
    problems = setup.engine.validate(_flow({"url": "http://example.com/x", "dataSourceId": src["id"]}))
    assert [(p.node_id, p.path) for p in problems if p.severity == "error"] == [("call", "config.url")]
    sneaky = await _run(setup, {"url": "{{ ctx.input.u }}", "dataSourceId": src["id"]}, {"u": "http://example.com/"})
    assert "with a dataSourceId it is a path" in sneaky.run.output["error"]["message"]


async def test_another_tenants_data_source_is_not_found(setup: Setup, http_base: str) -> None:
    src = await setup.data.create_data_source(
        setup.other, {"name": "theirs", "kind": "http", "config": {"baseUrl": http_base}, "secrets": {"X-Key": "k"}}
    )
    theirs = await _run(setup, {"url": "/x", "dataSourceId": src["id"]})
    nobody = await _run(setup, {"url": "/x", "dataSourceId": "ds-missing"})
    assert theirs.run.output["error"] == {"type": "NotFound", "message": f"data source {src['id']!r} does not exist"}
    assert nobody.run.output["error"]["message"] == "data source 'ds-missing' does not exist"
    assert "theirs" not in str(theirs.run.output)


async def test_refused_addresses_fail_with_a_clear_error(guarded: Setup, http_base: str) -> None:
    for url in ("http://169.254.169.254/latest/meta-data/", http_base + "/x"):
        problems = guarded.engine.validate(_flow({"url": url}))
        refused = [p for p in problems if p.path == "config.url"]
        assert refused and "FLOWDECK_HTTP_ALLOW" in refused[0].message and refused[0].severity == "error"
    # a template is only known at run time: the node fails, naming the address and the setting
    outcome = await _run(guarded, {"url": "{{ ctx.input.url }}"}, {"url": http_base + "/x"}, retry=RETRY)
    error = outcome.run.output["error"]
    assert error["type"] == "AddressRefused" and outcome.count("NODE_FAILED", "call") == 1
    assert "127.0.0.1 is a loopback address" in error["message"] and "FLOWDECK_HTTP_ALLOW" in error["message"]
    assert error["message"].startswith(f"config.url: the URL '{http_base}/x' is refused")


async def test_config_checks_name_the_field(setup: Setup) -> None:
    bad = {"method": "FETCH", "url": "", "query": [], "timeoutSeconds": 0, "failOnStatus": "yes", "bodyy": 1}
    paths = {p.path for p in setup.engine.validate(_flow(bad)) if p.node_id == "call"}
    assert paths == {
        "config.method",
        "config.url",
        "config.query",
        "config.timeoutSeconds",
        "config.failOnStatus",
        "config.bodyy",
    }
    assert not [p for p in setup.engine.validate(_flow({"url": "{{ ctx.input.url }}"})) if p.severity == "error"]


async def test_an_answer_over_the_size_cap_fails_the_node(db: Database, http_base: str) -> None:
    store = DataSourceStore(db, SecretBox("a-test-secret-key"))
    async with QueryEngine(http_allow=LOCAL, max_response_bytes=1000) as queries:
        engine = Engine(
            db, HandlerRegistry([*builtin_handlers(), HttpRequestHandler(store, queries)]), poll_interval=0.05
        )
        await engine.start()
        try:
            tenant = await TenantStore(db).ensure("acme")
            small = await run_to_end(engine, tenant, _flow({"url": http_base + "/big", "query": {"bytes": 1000}}))
            big = await run_to_end(engine, tenant, _flow({"url": http_base + "/big", "query": {"bytes": 1001}}))
        finally:
            await engine.stop()
    assert small.run.output["result"]["body"] == "x" * 1000
    assert big.run.output["error"]["type"] == "ResponseTooLarge"
    assert "larger than 1000 bytes" in big.run.output["error"]["message"]
