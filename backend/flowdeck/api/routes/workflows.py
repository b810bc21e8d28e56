"""``/api/workflows``: saved workflows, their immutable versions, validation, and production runs."""

from __future__ import annotations

from typing import Annotated, Any

from litestar import Controller, Request, delete, get, post, put
from litestar.params import JSONBody, QueryParameter
from litestar.status_codes import HTTP_200_OK, HTTP_201_CREATED, HTTP_202_ACCEPTED, HTTP_204_NO_CONTENT

from flowdeck.api.dependencies import AppServices, Caller, Cursor, Limit, ObjectId, VersionNumber
from flowdeck.api.openapi import SIGNED_IN, errors
from flowdeck.api.pagination import DEFAULT_LIMIT
from flowdeck.api.schemas import (
    RunAccepted,
    StartRun,
    ValidationOut,
    VersionPage,
    VersionRestore,
    WorkflowCreate,
    WorkflowOut,
    WorkflowPage,
    WorkflowSave,
)
from flowdeck.engine.run_timing import RunTiming

__all__ = ("WorkflowController",)


class WorkflowController(Controller):
    path = "/api/workflows"
    tags = ["workflows"]
    security = SIGNED_IN

    @get(raises=errors(400))
    async def list_workflows(
        self,
        principal: Caller,
        services: AppServices,
        cursor: Cursor = None,
        limit: Limit = DEFAULT_LIMIT,
        q: Annotated[
            str | None, QueryParameter(max_length=200, description="only titles containing this (any case)")
        ] = None,
    ) -> WorkflowPage:
        """The tenant's workflows, most recently saved first."""
        return await services.workflows.list(principal.tenant_id, cursor, limit, q)

    @post(status_code=HTTP_201_CREATED, raises=errors(400, 413))
    async def create_workflow(
        self, data: JSONBody[WorkflowCreate], principal: Caller, services: AppServices
    ) -> WorkflowOut:
        """Validate and save a new workflow as version 1 (a 400 lists every problem in ``extra``)."""
        return await services.workflows.create(principal.tenant_id, data, principal.email)

    @post("/validate", status_code=HTTP_200_OK, raises=errors(400, 413))
    async def validate_workflow(
        self,
        request: Request[Any, Any, Any],
        data: JSONBody[dict[str, Any]],
        principal: Caller,
        services: AppServices,
        workflow_id: Annotated[
            str | None,
            QueryParameter(
                name="workflowId",
                pattern=r"^[A-Za-z0-9_-]{1,64}$",
                description="the saved workflow this is an edit of (a node calling it gets a warning)",
            ),
        ] = None,
    ) -> ValidationOut:
        """What saving this body would answer, without saving it: every problem (errors and warnings).

        The body is read as the body of ``POST /api/workflows`` (unknown fields included) and meets the
        same checks as create, save and a test run; ``valid`` is false exactly when those refuse it.
        """
        return await services.workflows.validate(principal.tenant_id, data, len(await request.body()), workflow_id)

    @get("/{workflow_id:str}", raises=errors(400, 404))
    async def get_workflow(self, workflow_id: ObjectId, principal: Caller, services: AppServices) -> WorkflowOut:
        """The latest version."""
        return await services.workflows.get(principal.tenant_id, workflow_id)

    @put("/{workflow_id:str}", raises=errors(400, 404, 409, 413))
    async def save_workflow(
        self, workflow_id: ObjectId, data: JSONBody[WorkflowSave], principal: Caller, services: AppServices
    ) -> WorkflowOut:
        """Save a new version; ``version`` is the one the edit started from (a stale one is a 409).

        ``versionMessage`` (optional, up to 500 characters) is kept with the version, with its author (the caller).
        """
        return await services.workflows.save(principal.tenant_id, workflow_id, data, principal.email)

    @delete("/{workflow_id:str}", status_code=HTTP_204_NO_CONTENT, raises=errors(400, 404))
    async def delete_workflow(self, workflow_id: ObjectId, principal: Caller, services: AppServices) -> None:
        """Delete the workflow (its runs and their versions stay readable)."""
        await services.workflows.delete(principal.tenant_id, workflow_id)

    @get("/{workflow_id:str}/versions", raises=errors(400, 404))
    async def list_versions(
        self,
        workflow_id: ObjectId,
        principal: Caller,
        services: AppServices,
        cursor: Cursor = None,
        limit: Limit = DEFAULT_LIMIT,
    ) -> VersionPage:
        """The version history, newest first."""
        return await services.workflows.versions(principal.tenant_id, workflow_id, cursor, limit)

    @get("/{workflow_id:str}/versions/{version:int}", raises=errors(400, 404))
    async def get_version(
        self, workflow_id: ObjectId, version: VersionNumber, principal: Caller, services: AppServices
    ) -> WorkflowOut:
        return await services.workflows.get(principal.tenant_id, workflow_id, version)

    @post("/{workflow_id:str}/versions/{version:int}/restore", status_code=HTTP_201_CREATED, raises=errors(400, 404))
    async def restore_version(
        self,
        workflow_id: ObjectId,
        version: VersionNumber,
        principal: Caller,
        services: AppServices,
        data: JSONBody[VersionRestore | None] = None,
    ) -> WorkflowOut:
        """Save that version's definition again as the next version (message: "Restored version N" unless
        ``versionMessage`` says otherwise); checked like any save. The history only grows."""
        return await services.workflows.restore(principal.tenant_id, workflow_id, version, data, principal.email)

    @post("/{workflow_id:str}/runs", status_code=HTTP_202_ACCEPTED, raises=errors(400, 404, 413, 429))
    async def start_run(
        self, workflow_id: ObjectId, principal: Caller, services: AppServices, data: JSONBody[StartRun | None] = None
    ) -> RunAccepted:
        """Start a production run of the latest version with ``input``; follow it with GET /api/runs/{instanceId}.

        ``availableAt`` (epoch seconds): the run stays PENDING until then. ``deadlineAt``: it fails then
        if it has not finished (the earlier of it and ``options.timeoutSeconds`` wins); a deadline that
        has passed, or is not after ``availableAt``, is a 400. ``labels``: up to FLOWDECK_MAX_RUN_LABELS
        ``name: "value"`` strings the run carries (search them with ``GET /api/runs?label.name=value``).
        The run's ``trigger`` is ``editor`` when a browser session (the editor's Execute) starts it, else ``api``.
        ``priority`` (1-100): its place in the workflow's flow-control queue (``options.concurrency``).
        """
        run_input = None if data is None else data.input
        timing = None if data is None else RunTiming(data.available_at, data.deadline_at)
        labels = None if data is None else data.labels
        trigger = "editor" if principal.method == "session" else "api"
        priority = None if data is None else data.priority
        instance_id = await services.runs.start(
            principal.tenant_id,
            workflow_id,
            run_input,
            timing,
            labels,
            trigger,
            requested_by=principal.user_id,
            priority=priority,
        )
        return RunAccepted(instance_id=instance_id)
