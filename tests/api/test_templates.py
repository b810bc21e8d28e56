"""``POST /api/templates/preview``: a template or an expression resolved against a context, sandboxed like a run."""

from __future__ import annotations

import httpx
import pytest
from litestar.exceptions import TooManyRequestsException

from flowdeck.api.routes.templates import PreviewLimiter
from tests.api.conftest import Account

pytestmark = pytest.mark.asyncio(loop_scope="module")

CTX = {"input": {"items": [1, 2, 3], "name": "Ada"}, "count_items": {"value": 3}}


async def test_a_template_resolves_to_its_native_value_or_its_text(alice: Account) -> None:
    preview = "/api/templates/preview"
    one = await alice.client.post(preview, json={"template": "{{ ctx.input.items }}", "context": CTX})
    assert one.status_code == 200 and one.json() == {"value": [1, 2, 3]}
    mixed = await alice.client.post(
        preview, json={"template": "Hi {{ ctx.input.name }}: {{ ctx.count_items.value * 2 }}", "context": CTX}
    )
    assert mixed.json() == {"value": "Hi Ada: 6"}
    cond = await alice.client.post(preview, json={"expression": "ctx.count_items.value > 2", "context": CTX})
    assert cond.json() == {"value": True}


async def test_a_failing_source_is_a_400_that_says_why(alice: Account) -> None:
    preview = "/api/templates/preview"
    missing = await alice.client.post(preview, json={"template": "{{ ctx.nope.x }}", "context": CTX})
    assert missing.status_code == 400 and "'nope' is undefined" in missing.json()["detail"]
    syntax = await alice.client.post(preview, json={"expression": "ctx.input.items +", "context": CTX})
    assert syntax.status_code == 400 and "syntax error" in syntax.json()["detail"]
    both = await alice.client.post(preview, json={"template": "x", "expression": "1", "context": CTX})
    assert both.status_code == 400 and "exactly one" in both.json()["detail"]
    unknown = await alice.client.post(preview, json={"template": "x", "ctx": {}})
    assert unknown.status_code == 400


async def test_the_sandbox_of_runs_applies(alice: Account) -> None:
    preview = "/api/templates/preview"
    escape = await alice.client.post(preview, json={"template": "{{ ctx.__class__.__mro__ }}", "context": {}})
    assert escape.status_code == 400
    statements = await alice.client.post(
        preview, json={"template": "{% for i in range(9) %}{{ i }}{% endfor %}", "context": {}}
    )
    assert statements.status_code == 400
    bomb = await alice.client.post(preview, json={"expression": "'x' * 10**9", "context": {}})
    assert bomb.status_code == 400 and "characters or items" in bomb.json()["detail"]


async def test_size_and_sign_in_are_enforced(alice: Account, anonymous: httpx.AsyncClient) -> None:
    huge = await alice.client.post(
        "/api/templates/preview", json={"template": "{{ ctx.a }}", "context": {"a": "x" * 300_000}}
    )
    assert huge.status_code == 413
    refused = await anonymous.post("/api/templates/preview", json={"template": "{{ 1 }}", "context": {}})
    assert refused.status_code in (401, 403)


async def test_the_limiter_refuses_past_its_rate_and_forgets_after_a_minute() -> None:
    limiter = PreviewLimiter(per_minute=2)
    limiter.check("u", now=0)
    limiter.check("u", now=1)
    with pytest.raises(TooManyRequestsException):
        limiter.check("u", now=2)
    limiter.check("other", now=2)
    limiter.check("u", now=61)
