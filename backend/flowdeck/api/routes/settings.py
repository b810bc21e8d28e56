"""``/api/settings/retention``: how long the caller's tenant keeps its finished runs (issue 22)."""

from __future__ import annotations

import time

from litestar import Controller, delete, get, put
from litestar.params import JSONBody

from flowdeck.api.dependencies import AppServices, Caller
from flowdeck.api.openapi import SIGNED_IN, errors
from flowdeck.api.schemas import RetentionIn, RetentionOut
from flowdeck.domain.retention import RetentionPolicy
from flowdeck.engine.pruning import Pruner

__all__ = ("SettingsController",)


def _body(policy: RetentionPolicy) -> RetentionIn:
    return RetentionIn(
        max_age_days=policy.max_age_days, test_max_age_days=policy.test_max_age_days, max_runs=policy.max_runs
    )


async def _answer(pruner: Pruner, tenant_id: str) -> RetentionOut:
    policy, custom = await pruner.policy(tenant_id)
    return RetentionOut(
        max_age_days=policy.max_age_days,
        test_max_age_days=policy.test_max_age_days,
        max_runs=policy.max_runs,
        custom=custom,
        defaults=_body(pruner.defaults),
    )


class SettingsController(Controller):
    path = "/api/settings"
    tags = ["settings"]
    security = SIGNED_IN

    @get("/retention", raises=errors())
    async def get_retention(self, principal: Caller, services: AppServices) -> RetentionOut:
        """The retention policy the tenant's finished runs are pruned by (its own, or the server's defaults)."""
        return await _answer(services.engine.pruner, principal.tenant_id)

    @put("/retention", raises=errors(400, 413))
    async def put_retention(
        self, data: JSONBody[RetentionIn], principal: Caller, services: AppServices
    ) -> RetentionOut:
        """Set the tenant's own policy; the next pruning pass (within a minute) follows it. ``0`` keeps forever."""
        policy = RetentionPolicy(data.max_age_days, data.test_max_age_days, data.max_runs)
        await services.engine.pruner.store.put(principal.tenant_id, policy, time.time())
        return await _answer(services.engine.pruner, principal.tenant_id)

    @delete("/retention", status_code=200, raises=errors())
    async def reset_retention(self, principal: Caller, services: AppServices) -> RetentionOut:
        """Forget the tenant's own policy: the server's defaults apply again."""
        await services.engine.pruner.store.reset(principal.tenant_id)
        return await _answer(services.engine.pruner, principal.tenant_id)
