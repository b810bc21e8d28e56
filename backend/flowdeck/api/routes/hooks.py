"""Webhooks (SPEC §8): ``/api/workflows/{id}/webhook`` manages a workflow's secret; ``POST /hooks/{id}`` starts runs.

``/hooks`` is public as far as the auth middleware goes: the handler authenticates the call itself, by
the webhook secret or an API token (``triggers/webhooks.py``), and never reads cookies.
"""

from __future__ import annotations

from typing import Annotated, Any, Final

import msgspec
from litestar import Controller, Request, Response, get, post
from litestar.exceptions import NotAuthorizedException, NotFoundException, ValidationException
from litestar.openapi.spec import SecurityRequirement
from litestar.params import QueryParameter
from litestar.status_codes import HTTP_200_OK, HTTP_201_CREATED, HTTP_202_ACCEPTED

from flowdeck.api.auth import PUBLIC
from flowdeck.api.dependencies import AppServices, Caller, ObjectId
from flowdeck.api.inputs import check_json
from flowdeck.api.openapi import SIGNED_IN, errors
from flowdeck.api.schemas import HookFinished, HookPending, RunAccepted, WebhookOut, WebhookSecretOut
from flowdeck.api.services.runs import checked_timing
from flowdeck.domain.flow_control import MAX_PRIORITY, MIN_PRIORITY
from flowdeck.domain.labels import label_filters
from flowdeck.engine.run_timing import RunTiming
from flowdeck.triggers.webhooks import (
    MAX_WAIT_SECONDS,
    SECRET_HEADER,
    WebhookNotFoundError,
    WebhookUnauthorizedError,
    hook_url,
)

__all__ = ("HookController", "WebhookController")

HOOK_SECURITY: Final[list[SecurityRequirement]] = [{"webhookSecret": []}, {"token": []}]
Wait = Annotated[
    float | None,
    QueryParameter(
        gt=0,
        le=MAX_WAIT_SECONDS,
        description="wait up to this many seconds (at most 30) for the run to finish and answer its output",
    ),
]


AvailableAt = Annotated[
    float | None, QueryParameter(name="availableAt", ge=0, le=1e11, description="epoch seconds: PENDING until then")
]
DeadlineAt = Annotated[
    float | None, QueryParameter(name="deadlineAt", ge=0, le=1e11, description="epoch seconds: the run fails then")
]
Priority = Annotated[
    int | None,
    QueryParameter(
        ge=MIN_PRIORITY,
        le=MAX_PRIORITY,
        description="1-100 (default: the workflow's options.priority, else 50): higher is taken first",
    ),
]


def _not_found(exc: WebhookNotFoundError) -> NotFoundException:
    return NotFoundException(detail=str(exc))


class WebhookController(Controller):
    path = "/api/workflows/{workflow_id:str}/webhook"
    tags = ["triggers"]
    security = SIGNED_IN

    @get(raises=errors(400, 404))
    async def get_webhook(self, workflow_id: ObjectId, principal: Caller, services: AppServices) -> WebhookOut:
        """The workflow's webhook: its URL, and whether (and since when) it has a secret."""
        try:
            row = await services.webhooks.info(principal.tenant_id, workflow_id)
        except WebhookNotFoundError as exc:
            raise _not_found(exc) from exc
        return WebhookOut(
            url=hook_url(workflow_id),
            has_secret=row is not None,
            created_at=None if row is None else row.created_at,
            last_used_at=None if row is None else row.last_used_at,
        )

    @post("/secret", status_code=HTTP_201_CREATED, raises=errors(400, 404))
    async def new_webhook_secret(
        self, workflow_id: ObjectId, principal: Caller, services: AppServices
    ) -> WebhookSecretOut:
        """Make a new webhook secret (shown this once); the previous one stops working at once."""
        try:
            secret = await services.webhooks.new_secret(principal.tenant_id, workflow_id)
        except WebhookNotFoundError as exc:
            raise _not_found(exc) from exc
        return WebhookSecretOut(url=hook_url(workflow_id), secret=secret)


def _body_input(raw: bytes) -> Any:
    if not raw.strip():
        return None
    try:
        value = msgspec.json.decode(raw)
    except msgspec.DecodeError as exc:
        raise ValidationException(
            detail=f"the request body is not JSON: {exc}", extra=[{"key": "body", "source": "body"}]
        ) from exc
    check_json(input=value)
    return value


class HookController(Controller):
    path = "/hooks"
    tags = ["triggers"]
    security = HOOK_SECURITY

    @post(
        "/{workflow_id:str}",
        opt={PUBLIC: True},
        status_code=HTTP_202_ACCEPTED,
        raises=errors(400, 401, 404, 413, 429, public=True),
    )
    async def call_webhook(
        self,
        workflow_id: ObjectId,
        request: Request[Any, Any, Any],
        services: AppServices,
        wait: Wait = None,
        available_at: AvailableAt = None,
        deadline_at: DeadlineAt = None,
        priority: Priority = None,
    ) -> Response[Any]:
        """Start a production run (trigger ``webhook``) with the JSON body as its input.

        ``?availableAt=`` and ``?deadlineAt=`` (epoch seconds) schedule its start and set its deadline,
        as for ``POST /api/workflows/{id}/runs`` (the body is all input, so they are query parameters);
        so are labels: ``?label.customer=acme`` (up to FLOWDECK_MAX_RUN_LABELS), and ``?priority=`` (1-100,
        default the workflow's ``options.priority``): its place in the flow-control queue and its node jobs'
        order within the tenant's turn.

        Authenticated by the workflow's webhook secret in ``X-Flowdeck-Secret`` or by an API token of the
        workflow's tenant. Answers 202 ``{instanceId}``; with ``wait``, 200 ``{instanceId, status, output,
        error}`` if the run finished in time, else 202 ``{instanceId, status: "RUNNING"}``.
        """
        hooks = services.webhooks
        try:
            target = await hooks.authorize(
                workflow_id, request.headers.get(SECRET_HEADER.lower()), request.headers.get("authorization")
            )
            run_input = _body_input(await request.body())
            timing = checked_timing(RunTiming(available_at, deadline_at))
            labels = label_filters(request.query_params, services.engine.label_limits)
            outcome = await hooks.trigger(target, run_input, wait, timing, labels, priority)
        except WebhookNotFoundError as exc:
            raise _not_found(exc) from exc
        except WebhookUnauthorizedError as exc:
            raise NotAuthorizedException(detail=str(exc)) from exc
        run, instance_id = outcome.run, outcome.instance_id
        if run is None:
            return Response(RunAccepted(instance_id=instance_id), status_code=HTTP_202_ACCEPTED)
        if not run.ended:
            return Response(HookPending(instance_id=instance_id, status=run.status), status_code=HTTP_202_ACCEPTED)
        finished = HookFinished(instance_id=instance_id, status=run.status, output=run.output, error=run.error)
        return Response(finished, status_code=HTTP_200_OK)
