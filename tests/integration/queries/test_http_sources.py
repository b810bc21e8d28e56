"""HTTP data sources against a real HTTP server on 127.0.0.1: requests, results, limits, errors."""

from __future__ import annotations

import json
import time

import pytest

from flowdeck.domain.errors import NodeError
from flowdeck.queries.engine import QueryEngine
from flowdeck.queries.models import DataSource
from tests.integration.queries.conftest import LOCAL
from tests.integration.queries.support import closed_port, query, source


def api(base: str, **config: object) -> DataSource:
    return source("http", {"baseUrl": f"{base}/api", "headers": {"Accept": "application/json"}, **config}, name="api")


async def test_get_resolves_placeholders_and_merges_secret_headers(query_engine: QueryEngine, http_base: str) -> None:
    src = api(http_base)
    q = query(
        src, ["user", "page", "tags", "trace"], method="get", path="/users/{{ user }}/orders",
        query={"page": "{{ page }}", "tag": "{{ tags }}", "fixed": "yes", "skip": None},
        headers={"X-Trace": "trace-{{ trace }}", "Authorization": "overridden by the secret"},
    )  # fmt: skip
    args = {"user": "a/b ..", "page": 2, "tags": ["x", "y"], "trace": 7}
    result = await query_engine.run(src, {"Authorization": "Bearer s3cret"}, q, args)
    assert result["status"] == 200
    assert result["headers"]["content-type"] == "application/json"
    assert result["headers"]["x-server"] == "test"
    echo = result["body"]
    assert echo["method"] == "GET"
    assert echo["path"] == "/api/users/a%2Fb%20../orders"  # one segment: an argument cannot leave the base URL
    assert echo["query"] == {"page": "2", "tag": ["x", "y"], "fixed": "yes"}
    assert echo["headers"]["authorization"] == "Bearer s3cret"
    assert echo["headers"]["x-trace"] == "trace-7"
    assert echo["headers"]["accept"] == "application/json"
    dots = await query_engine.run(src, {}, q, {**args, "user": ".."})
    assert dots["body"]["path"] == "/api/users/%2E%2E/orders"


async def test_post_sends_a_json_body_with_native_values(query_engine: QueryEngine, http_base: str) -> None:
    src = api(http_base)
    q = query(src, ["qty", "name"], method="POST", path="/orders",
              body={"qty": "{{ qty }}", "label": "order for {{ name }}", "items": ["{{ name }}", 1]})  # fmt: skip
    result = await query_engine.run(src, {}, q, {"qty": 3, "name": "Ann"})
    assert result["body"]["method"] == "POST"
    assert result["body"]["headers"]["content-type"] == "application/json"
    assert json.loads(result["body"]["body"]) == {"qty": 3, "label": "order for Ann", "items": ["Ann", 1]}


async def test_text_and_binary_bodies(query_engine: QueryEngine, http_base: str) -> None:
    src = source("http", {"baseUrl": http_base})
    text = await query_engine.run(src, {}, query(src, [], path="/text"), {})
    assert text["body"] == "héllo" and "bodyEncoding" not in text
    binary = await query_engine.run(src, {}, query(src, [], path="/binary"), {})
    assert binary["bodyEncoding"] == "base64" and binary["body"].startswith("AAECAwQF")


@pytest.mark.parametrize(
    ("status", "retryable"), [(500, True), (503, True), (429, True), (404, False), (400, False), (401, False)]
)
async def test_status_codes(query_engine: QueryEngine, http_base: str, status: int, retryable: bool) -> None:
    src = source("http", {"baseUrl": http_base})
    with pytest.raises(NodeError) as failure:
        await query_engine.run(src, {}, query(src, [], name="st", path=f"/status/{status}"), {})
    assert failure.value.retryable is retryable and failure.value.error_type == "HTTPError"
    assert failure.value.message.startswith(f"saved query 'st' (GET /status/{status}): HTTP {status} ")
    assert failure.value.message.endswith(f": status {status}")


async def test_responses_over_the_size_cap_are_refused(http_base: str) -> None:
    src = source("http", {"baseUrl": http_base})
    async with QueryEngine(max_response_bytes=1000, http_allow=LOCAL) as engine:
        exact = await engine.run(src, {}, query(src, [], path="/big", query={"bytes": 1000}), {})
        assert len(exact["body"]) == 1000
        for path in ("/big", "/stream"):  # declared too large, or found too large while reading
            with pytest.raises(NodeError) as failure:
                await engine.run(src, {}, query(src, [], path=path, query={"bytes": 5000}), {})
            assert not failure.value.retryable and failure.value.error_type == "ResponseTooLarge"
        streamed = await engine.run(src, {}, query(src, [], path="/stream", query={"bytes": 999}), {})
        assert streamed["body"] == "y" * 999


async def test_timeouts_and_refused_connections_are_retryable(http_base: str) -> None:
    src = source("http", {"baseUrl": http_base, "timeoutSeconds": 0.3})
    async with QueryEngine(http_allow=LOCAL) as engine:
        began = time.monotonic()
        with pytest.raises(NodeError) as slow:
            await engine.run(src, {}, query(src, [], path="/slow", query={"seconds": 2}), {})
        assert time.monotonic() - began < 1.5
        assert slow.value.retryable and slow.value.error_type == "QueryTimeout"
        down = source("http", {"baseUrl": f"http://127.0.0.1:{closed_port()}"}, name="down")
        with pytest.raises(NodeError) as refused:
            await engine.run(down, {"X-Key": "k-secret"}, query(down, [], path="/x"), {})
    assert refused.value.retryable and refused.value.error_type == "ConnectionError"
    assert refused.value.message.startswith("cannot reach data source 'down'")
    assert "k-secret" not in refused.value.message


async def test_a_json_content_type_with_a_broken_body_is_an_error(query_engine: QueryEngine, http_base: str) -> None:
    src = source("http", {"baseUrl": http_base})
    with pytest.raises(NodeError) as failure:
        await query_engine.run(src, {}, query(src, [], path="/badjson"), {})
    assert not failure.value.retryable and "not valid JSON" in failure.value.message


async def test_header_arguments_cannot_inject_headers(query_engine: QueryEngine, http_base: str) -> None:
    src = source("http", {"baseUrl": http_base})
    q = query(src, ["v"], path="/echo", headers={"X-V": "{{ v }}"})
    with pytest.raises(NodeError) as failure:
        await query_engine.run(src, {}, q, {"v": "a\r\nX-Evil: 1"})
    assert not failure.value.retryable and failure.value.error_type == "ArgumentError"
