"""``/api/examples``: the examples to start from, and starting one (a workflow of the caller's tenant)."""

from __future__ import annotations

import httpx
import pytest

from tests.api.conftest import Account

pytestmark = pytest.mark.asyncio(loop_scope="module")


async def test_examples_are_listed_with_a_sample_input(alice: Account, anonymous: httpx.AsyncClient) -> None:
    listed = await alice.client.get("/api/examples")
    assert listed.status_code == 200
    items = listed.json()["items"]
    assert {e["id"] for e in items} == {"loop", "condition-delay", "data-query"}
    assert all(e["title"] and e["description"] for e in items)
    assert next(e for e in items if e["id"] == "loop")["input"] == {"numbers": [3, 1, 4, 1, 5]}
    assert (await anonymous.get("/api/examples")).status_code == 401


async def test_starting_an_example_makes_a_workflow_of_the_callers_tenant(alice: Account, mallory: Account) -> None:
    # (The API tests' server has no python or dataQuery handlers: tests/integration/test_examples.py runs all.)
    started = await alice.client.post("/api/examples/condition-delay")
    assert started.status_code == 201, started.text
    workflow = started.json()
    assert workflow["version"] == 1 and workflow["title"] == "Example: branch, then wait"
    assert {n["type"] for n in workflow["nodes"]} == {"start", "condition", "delay", "end"}

    assert [w["id"] for w in (await alice.client.get("/api/workflows")).json()["items"]] == [workflow["id"]]
    assert (await mallory.client.get(f"/api/workflows/{workflow['id']}")).status_code == 404
    assert (await mallory.client.get("/api/workflows")).json()["items"] == []
    assert (await alice.client.post("/api/examples/nope")).status_code == 404
    assert (await alice.client.post("/api/examples/..%2Fetc")).status_code in (400, 404)
