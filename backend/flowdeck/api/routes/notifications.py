"""A workflow's notification settings: its signing secret (shown once, rotatable) and the test button."""

from __future__ import annotations

from litestar import Controller, get, post
from litestar.exceptions import NotFoundException, ValidationException
from litestar.params import JSONBody
from litestar.status_codes import HTTP_200_OK, HTTP_201_CREATED

from flowdeck.api.dependencies import AppServices, Caller, ObjectId
from flowdeck.api.openapi import SIGNED_IN, errors
from flowdeck.api.schemas import (
    NotificationSecretOut,
    NotificationSettingsOut,
    NotificationTestIn,
    NotificationTestOut,
)
from flowdeck.notifications.targets import shape_problems, urls_of
from flowdeck.storage.workflows import WorkflowRecord

__all__ = ("NotificationController",)


async def _workflow(services: AppServices, tenant_id: str, workflow_id: str) -> WorkflowRecord:
    record = await services.engine.workflows.get(tenant_id, workflow_id)
    if record is None:
        raise NotFoundException(detail=f"workflow {workflow_id} not found")
    return record


class NotificationController(Controller):
    path = "/api/workflows/{workflow_id:str}/notifications"
    tags = ["workflows"]
    security = SIGNED_IN

    @get(raises=errors(400, 404))
    async def get_notifications(
        self, workflow_id: ObjectId, principal: Caller, services: AppServices
    ) -> NotificationSettingsOut:
        """Whether the workflow has a signing secret, and the secret itself the first time it is read."""
        await _workflow(services, principal.tenant_id, workflow_id)
        info = await services.notifier.secrets.reveal(principal.tenant_id, workflow_id)
        return NotificationSettingsOut(
            has_secret=info.created_at is not None, created_at=info.created_at, secret=info.secret
        )

    @post("/secret", status_code=HTTP_201_CREATED, raises=errors(400, 404))
    async def rotate_notification_secret(
        self, workflow_id: ObjectId, principal: Caller, services: AppServices
    ) -> NotificationSecretOut:
        """Make a new signing secret (shown this once); notifications are signed with it from now on."""
        await _workflow(services, principal.tenant_id, workflow_id)
        return NotificationSecretOut(secret=await services.notifier.secrets.rotate(principal.tenant_id, workflow_id))

    @post("/test", status_code=HTTP_200_OK, raises=errors(400, 404))
    async def test_notification(
        self,
        workflow_id: ObjectId,
        principal: Caller,
        services: AppServices,
        data: JSONBody[NotificationTestIn | None] = None,
    ) -> NotificationTestOut:
        """Send a sample payload (event ``test``), signed, to the URL and report the receiver's answer."""
        record = await _workflow(services, principal.tenant_id, workflow_id)
        url = None if data is None else data.url
        if url is None:
            saved = urls_of(record.definition)
            if not saved:
                raise ValidationException(detail="url: no URL given and none saved in options.onFailure or onSlaBreach")
            url = saved[0][1]
        problems = shape_problems({"onFailure": {"url": url}})
        problems += await services.notifier.target_problems(
            principal.tenant_id, {"options": {"onFailure": {"url": url}}}
        )
        if problems:
            raise ValidationException(detail="url: " + problems[0].message.split(": ", 1)[-1])
        result = await services.notifier.send_test(principal.tenant_id, workflow_id, record.title, url)
        return NotificationTestOut(url=result.url, ok=result.ok, status=result.status, error=result.error)
