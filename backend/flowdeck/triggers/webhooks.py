"""Webhooks: ``POST /hooks/{workflowId}`` starts a production run of the workflow with the request body as input.

A workflow has at most one webhook secret, ``fdh_`` + 256 random bits, stored as its SHA-256 (like API
tokens) and shown once; making a new one replaces the old at once. A call is authenticated by the
secret (``X-Flowdeck-Secret``, compared in constant time) or by an API token of a user of the workflow's
tenant; cookies are never looked at, so CSRF cannot apply. A workflow without a secret accepts only
API tokens.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from flowdeck.accounts.credentials import hash_secret, same_secret
from flowdeck.accounts.service import AccountsService
from flowdeck.engine.engine import Engine
from flowdeck.engine.run_timing import RunTiming
from flowdeck.engine.run_watch import RunOutcome
from flowdeck.storage.webhooks import HookTarget, WebhookRow, WebhookStore

__all__ = (
    "MAX_WAIT_SECONDS",
    "SECRET_HEADER",
    "WEBHOOK_SECRET_PREFIX",
    "HookOutcome",
    "WebhookNotFoundError",
    "WebhookService",
    "WebhookUnauthorizedError",
    "hook_url",
)

WEBHOOK_SECRET_PREFIX: Final = "fdh_"  # noqa: S105 -- a marker, not a secret
SECRET_HEADER: Final = "X-Flowdeck-Secret"  # noqa: S105 -- a header name
MAX_WAIT_SECONDS: Final = 30.0
TOUCH_SECONDS: Final = 60.0
"""``lastUsedAt`` is written at most once a minute, like an API token's."""
TRIGGER: Final = "webhook"
_MAX_SECRET_CHARS: Final = 128


def hook_url(workflow_id: str) -> str:
    return f"/hooks/{workflow_id}"


class WebhookNotFoundError(LookupError):
    """No such live workflow for this caller: the same answer whether it exists elsewhere or nowhere."""

    def __init__(self, workflow_id: str) -> None:
        super().__init__(f"workflow {workflow_id} not found")


class WebhookUnauthorizedError(Exception):
    """The call carries no credential, or a wrong one."""


@dataclass(frozen=True, slots=True)
class HookOutcome:
    instance_id: str
    run: RunOutcome | None
    """``None`` when the caller did not wait; else where the run stood when the wait ended."""


class WebhookService:
    def __init__(self, store: WebhookStore, engine: Engine, accounts: AccountsService) -> None:
        self.store = store
        self.engine = engine
        self.accounts = accounts

    async def info(self, tenant_id: str, workflow_id: str) -> WebhookRow | None:
        """The secret's row (``None``: the workflow has no secret); ``WebhookNotFoundError`` if not the tenant's."""
        exists, row = await self.store.get(tenant_id, workflow_id)
        if not exists:
            raise WebhookNotFoundError(workflow_id)
        return row

    async def new_secret(self, tenant_id: str, workflow_id: str) -> str:
        """Make a new secret (returned once; only its hash is stored) and retire the old one."""
        secret = WEBHOOK_SECRET_PREFIX + secrets.token_urlsafe(32)
        if not await self.store.set_secret(tenant_id, workflow_id, hash_secret(secret), time.time()):
            raise WebhookNotFoundError(workflow_id)
        return secret

    async def authorize(self, workflow_id: str, secret: str | None, authorization: str | None) -> HookTarget:
        """The workflow a call may start, or ``WebhookNotFoundError`` / ``WebhookUnauthorizedError``."""
        target = await self.store.target(workflow_id)
        if target is None:
            raise WebhookNotFoundError(workflow_id)
        if secret is not None:
            return await self._by_secret(target, secret)
        if authorization is not None:
            scheme, _, token = authorization.partition(" ")
            if scheme.lower() != "bearer" or not token.strip():
                raise WebhookUnauthorizedError(f"use the header {SECRET_HEADER}, or Authorization: Bearer <api token>")
            principal = await self.accounts.authenticate_token(token.strip())
            if principal is None:
                raise WebhookUnauthorizedError("the API token is unknown, expired or revoked")
            if principal.tenant_id != target.tenant_id:
                raise WebhookNotFoundError(workflow_id)
            return target
        raise WebhookUnauthorizedError(
            f"send the workflow's webhook secret in {SECRET_HEADER}, or Authorization: Bearer <api token>"
        )

    async def _by_secret(self, target: HookTarget, secret: str) -> HookTarget:
        # Hash whatever was sent (bounded), then compare in constant time with the stored hash.
        given = hash_secret(secret.strip()[:_MAX_SECRET_CHARS])
        if target.secret_hash is None or not same_secret(given, target.secret_hash):
            raise WebhookUnauthorizedError(f"wrong {SECRET_HEADER} for this workflow")
        now = time.time()
        if target.last_used_at is None or now - target.last_used_at > TOUCH_SECONDS:
            await self.store.touch(target.workflow_id, target.secret_hash, now)
        return target

    async def trigger(
        self,
        target: HookTarget,
        run_input: Any,
        wait: float | None,
        timing: RunTiming | None = None,
        labels: Mapping[str, str] | None = None,
        priority: int | None = None,
    ) -> HookOutcome:
        """Start a production run (with ``labels``; ``priority`` 1-100, checked by the caller, else the
        workflow's ``options.priority``); with ``wait``, wait up to that many seconds for it to finish."""
        if wait is None:
            return HookOutcome(await self._start(target, run_input, None, timing, labels, priority), None)
        # Watched from before it starts: its end is heard, not read (engine/run_watch.py).
        with self.engine.watch_run() as watch:
            instance_id = await self._start(target, run_input, watch.instance_id, timing, labels, priority)
            outcome = await watch.outcome(min(wait, MAX_WAIT_SECONDS), opened_before_start=True)
        return HookOutcome(instance_id, outcome)

    async def _start(
        self,
        target: HookTarget,
        run_input: Any,
        instance_id: str | None,
        timing: RunTiming | None,
        labels: Mapping[str, str] | None,
        priority: int | None,
    ) -> str:
        try:
            return await self.engine.start_workflow_run(
                target.tenant_id,
                target.workflow_id,
                run_input,
                trigger=TRIGGER,
                instance_id=instance_id,
                timing=timing,
                labels=labels,
                priority=priority,
            )
        except LookupError as exc:  # deleted in between
            raise WebhookNotFoundError(target.workflow_id) from exc
