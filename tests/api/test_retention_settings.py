"""``/api/settings/retention`` (issue 22): a tenant reads the policy its runs are pruned by, sets its own
(validated, every bad field named), and goes back to the server's defaults; other tenants never see it."""

from __future__ import annotations

from typing import Any

import pytest

from tests.api.conftest import Account, Server

pytestmark = pytest.mark.asyncio(loop_scope="module")

DEFAULTS = {"maxAgeDays": 30, "testMaxAgeDays": 7, "maxRuns": 100_000}


async def test_a_tenant_starts_with_the_servers_defaults(alice: Account) -> None:
    response = await alice.client.get("/api/settings/retention")
    assert response.status_code == 200, response.text
    assert response.json() == {**DEFAULTS, "custom": False, "defaults": DEFAULTS}


async def test_a_tenant_sets_its_own_policy_and_the_pruner_follows_it(
    server: Server, alice: Account, mallory: Account
) -> None:
    own = {"maxAgeDays": 90, "testMaxAgeDays": 0, "maxRuns": 5000}
    response = await alice.client.put("/api/settings/retention", json=own)
    assert response.status_code == 200, response.text
    assert response.json() == {**own, "custom": True, "defaults": DEFAULTS}
    assert (await alice.client.get("/api/settings/retention")).json()["maxAgeDays"] == 90
    assert (await mallory.client.get("/api/settings/retention")).json()["custom"] is False  # tenants apart

    tenants = {t.name: t for t in await server.engine.pruner.store.tenants(server.engine.pruner.defaults)}
    policy = tenants[alice.tenant].policy
    assert (policy.max_age_days, policy.test_max_age_days, policy.max_runs) == (90, 0, 5000)

    reset = await alice.client.delete("/api/settings/retention")
    assert reset.status_code == 200, reset.text
    assert reset.json() == {**DEFAULTS, "custom": False, "defaults": DEFAULTS}


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"maxAgeDays": -1, "testMaxAgeDays": 7, "maxRuns": 10}, "maxAgeDays"),
        ({"maxAgeDays": 30, "testMaxAgeDays": 36_501, "maxRuns": 10}, "testMaxAgeDays"),
        ({"maxAgeDays": 30, "testMaxAgeDays": 7, "maxRuns": "many"}, "maxRuns"),
        ({"maxAgeDays": 30, "testMaxAgeDays": 7}, "maxRuns"),
        ({"maxAgeDays": 30, "testMaxAgeDays": 7, "maxRuns": 10, "keepForever": True}, "keepForever"),
        ({"maxAgeDays": 1.5, "testMaxAgeDays": 7, "maxRuns": 10}, "maxAgeDays"),
    ],
)
async def test_a_bad_policy_is_a_400_naming_the_field(alice: Account, body: dict[str, Any], field: str) -> None:
    response = await alice.client.put("/api/settings/retention", json=body)
    assert response.status_code == 400, response.text
    assert field in response.text
    assert (await alice.client.get("/api/settings/retention")).json()["custom"] is False  # nothing was stored


async def test_signing_in_is_required(anonymous: Any) -> None:
    assert (await anonymous.get("/api/settings/retention")).status_code == 401
    assert (await anonymous.put("/api/settings/retention", json=DEFAULTS)).status_code == 401
