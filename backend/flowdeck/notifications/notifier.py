"""Sends the queued notices: starts the error workflow, POSTs the signed payload, retries with backoff.

Each notice is leased to one process at a time (``NoticeOutbox.claim``), so it is handled once across
processes; a process that dies while sending leaves it due again after the lease (a receiver can tell a
repeat by its ``webhook-id``, derived from the notice and never reused). The error workflow's run has an
id derived from the notice too, so a retried notice never starts it twice. A run started by an error
workflow (trigger ``error``) never starts an error workflow itself: neither a workflow that handles its
own failure nor a chain of them can loop. A URL that keeps failing is retried for about ten minutes
(``RETRY_DELAYS``), then dropped with a log line.
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Final

import httpx

from flowdeck.domain.problems import Problem
from flowdeck.engine.engine import Engine
from flowdeck.notifications.payload import body_bytes, build_payload, signed_headers
from flowdeck.notifications.secrets import NotificationSecrets
from flowdeck.notifications.targets import OPTION_OF_EVENT, Target, target_of, urls_of
from flowdeck.outbound.addresses import OutboundPolicy
from flowdeck.outbound.transport import guarded_transport
from flowdeck.outbound.urls import URLRefusedError, parse_url
from flowdeck.queries.secrets import SecretBox, SecretKeyMissingError
from flowdeck.storage.notices import Notice, NoticeOutbox

__all__ = ("ERROR_TRIGGER", "Notifier", "TestResult")

log = logging.getLogger(__name__)

ERROR_TRIGGER: Final = "error"
RETRY_DELAYS: Final = (5.0, 15.0, 30.0, 60.0, 120.0, 180.0, 240.0)
"""Seconds before each retry of a URL; after the last, the notice is dropped (about 11 minutes in all)."""
LEASE_SECONDS: Final = 60.0
_RUN_IDS = uuid.UUID("5b0d7f3e-2a4c-4f21-9c55-6f0e4a1d2b77")
_DELIVERY_IDS = uuid.UUID("0c3f9a52-7d1e-4b8a-a6f4-2e9d5c7b1a30")


def _notice_key(notice: Notice) -> str:
    """What tells one notice from every other, ever (not its id alone: SQLite reuses a deleted row's id)."""
    return f"{notice.instance_id}/{notice.event}/{notice.created_at!r}/{notice.id}"


def delivery_id(notice: Notice) -> str:
    """The notice's ``webhook-id`` (and ``X-Flowdeck-Delivery``): the same on every retry, unique otherwise."""
    return "msg_" + uuid.uuid5(_DELIVERY_IDS, _notice_key(notice)).hex


class DeliveryError(Exception):
    def __init__(self, url: str, status: int) -> None:
        super().__init__(f"{url} answered {status}")
        self.status = status


@dataclass(frozen=True, slots=True)
class TestResult:
    url: str
    ok: bool
    status: int | None
    error: str | None


class Notifier:
    def __init__(
        self,
        engine: Engine,
        box: SecretBox,
        policy: OutboundPolicy,
        *,
        timeout: float = 10.0,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.engine = engine
        self.secrets = NotificationSecrets(engine.db, box)
        self.outbox = NoticeOutbox(engine.db)
        self.policy = policy
        self.clock = clock
        self.retry_delays: tuple[float, ...] = RETRY_DELAYS
        self.timeout = timeout  # a client per send: notifications are rare, nothing is held between them
        self._task: asyncio.Task[None] | None = None

    # -- on save ---------------------------------------------------------------------------------------
    async def target_problems(self, tenant_id: str, definition: Any) -> list[Problem]:
        """The error workflows must exist in the tenant; the URLs must pass the outgoing-request policy."""
        problems = []
        for event, option in OPTION_OF_EVENT.items():
            target = target_of(definition, event)
            if target is None or target.workflow_id is None:
                continue
            if await self.engine.workflows.latest_version(tenant_id, target.workflow_id) is None:
                path = f"options.{option}.workflowId"
                problems.append(
                    Problem("invalid_notification", f"{path}: no workflow {target.workflow_id} here", path=path)
                )
        for path, url in urls_of(definition):
            try:
                self.secrets.box.encrypt({})  # the signing secret is stored encrypted: a key must be set
            except SecretKeyMissingError:
                message = f"{path}: FLOWDECK_SECRET_KEY is not set (it encrypts the secret that signs notifications)"
                problems.append(Problem("invalid_notification", message, path=path))
                continue
            try:
                parse_url(url, self.policy)
            except URLRefusedError as exc:
                problems.append(Problem("invalid_notification", f"{path}: the URL {exc}", path=path))
        return problems

    async def saved(self, tenant_id: str, workflow_id: str, definition: Any) -> None:
        """After a save: the first notification URL makes the workflow's secret."""
        if urls_of(definition):
            await self.secrets.ensure(tenant_id, workflow_id)

    # -- sending ---------------------------------------------------------------------------------------
    def sweep_hook(self, now: float) -> Awaitable[None]:
        """The worker's sweep hook: starts a sweep in a task of its own (unless one still runs), so a slow
        receiver never holds up the worker's sweep (run timeouts, SLA marks)."""
        if self._task is None or self._task.done():
            self._task = asyncio.create_task(self.sweep(now), name="flowdeck-notifications")
        return asyncio.sleep(0)

    async def sweep(self, now: float) -> None:
        """Handle the due notices, side by side (each within the HTTP timeout, well inside its lease)."""
        await asyncio.gather(*(self._handle_one(n) for n in await self.outbox.claim(now, LEASE_SECONDS)))

    async def _handle_one(self, notice: Notice) -> None:
        try:
            await self._handle(notice)
        except Exception as exc:  # noqa: BLE001 - any failure is retried, and logged when dropped
            await self._failed(notice, f"{type(exc).__name__}: {exc}")
        else:
            await self.outbox.done(notice.id)

    async def close(self) -> None:
        """Wait for a sweep that is still sending (bounded by the HTTP timeout)."""
        if self._task is not None:
            await asyncio.gather(self._task, return_exceptions=True)
            self._task = None

    async def _failed(self, notice: Notice, error: str) -> None:
        if notice.attempts > len(self.retry_delays):
            log.warning(
                "notice %s of run %s dropped after %d attempts: %s",
                notice.id,
                notice.instance_id,
                notice.attempts,
                error,
            )
            await self.outbox.done(notice.id)
            return
        await self.outbox.retry_at(notice.id, self.clock() + self.retry_delays[notice.attempts - 1], error)

    async def _handle(self, notice: Notice) -> None:
        run = await self.engine.state.get_instance(notice.instance_id)
        if run is None or run.workflow_id is None or run.workflow_version is None:
            return
        definition = await self.engine.workflows.definition(run.workflow_id, run.workflow_version)
        target = target_of(definition, notice.event)
        if target is None:
            return
        payload = notice.payload
        if payload is None:  # fixed at the first attempt: every retry sends the same body
            rows = await self.engine.state.read_log(run.id)
            title = definition.get("title", "") if isinstance(definition, dict) else ""
            payload = build_payload(run, rows, title, notice.event)
            await self.outbox.set_payload(notice.id, payload)
        if target.workflow_id is not None and run.trigger != ERROR_TRIGGER:
            await self._start_error_workflow(notice, target, payload)
        if target.url is not None:
            await self._post(notice.tenant_id, run.workflow_id, target.url, payload, delivery_id(notice))

    async def _start_error_workflow(self, notice: Notice, target: Target, payload: Any) -> None:
        assert target.workflow_id is not None
        run_id = str(uuid.uuid5(_RUN_IDS, _notice_key(notice)))
        if await self.engine.state.get_instance(run_id) is not None:
            return  # started by an earlier attempt
        try:
            await self.engine.start_workflow_run(
                notice.tenant_id, target.workflow_id, payload, trigger=ERROR_TRIGGER, instance_id=run_id
            )
        except LookupError:
            log.warning("notice %s: error workflow %s does not exist (any more)", notice.id, target.workflow_id)
        except Exception:
            if await self.engine.state.get_instance(run_id) is None:
                raise

    async def _post(self, tenant_id: str, workflow_id: str, url: str, payload: Any, delivery: str) -> int:
        secret = await self.secrets.key(workflow_id)
        if secret is None:
            await self.secrets.ensure(tenant_id, workflow_id)
            secret = await self.secrets.key(workflow_id)
            assert secret is not None
        body = body_bytes(payload)
        headers = {
            "Content-Type": "application/json",
            **signed_headers(secret, delivery, int(self.clock()), body),  # signed at each attempt, with its time
            "X-Flowdeck-Event": str(payload.get("event", "")) if isinstance(payload, dict) else "",
            "X-Flowdeck-Delivery": delivery,
            "User-Agent": "Flowdeck-Notifications/1",
        }
        transport = guarded_transport(self.policy)
        async with httpx.AsyncClient(
            transport=transport, timeout=self.timeout, follow_redirects=False, trust_env=False
        ) as client:
            response = await client.post(url, content=body, headers=headers)
        if not 200 <= response.status_code < 300:
            raise DeliveryError(url, response.status_code)
        return response.status_code

    # -- the Settings panel's test button ---------------------------------------------------------------
    async def send_test(self, tenant_id: str, workflow_id: str, title: str, url: str) -> TestResult:
        """POST a sample payload (event ``test``) to ``url`` once and report what the receiver answered."""
        now = self.clock()
        payload = {
            "run": {
                "instanceId": "00000000-0000-0000-0000-000000000000",
                "workflowId": workflow_id,
                "version": None,
                "status": "FAILED",
                "error": "a sample failure (a test notification)",
                "failedNodeId": None,
                "input": {},
                "startedAt": now,
            },
            "workflow": {"id": workflow_id, "title": title},
            "event": "test",
        }
        try:
            status = await self._post(tenant_id, workflow_id, url, payload, f"msg_test_{uuid.uuid4().hex}")
        except DeliveryError as exc:
            return TestResult(url, False, exc.status, str(exc))
        except Exception as exc:  # noqa: BLE001 - the panel shows why (refused address, timeout, no key …)
            return TestResult(url, False, None, f"{type(exc).__name__}: {exc}")
        return TestResult(url, True, status, None)
