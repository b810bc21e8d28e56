"""``/api/runs``: production and test runs of the tenant: list, detail, log, timeline, cancel, partial retry."""

from __future__ import annotations

from typing import Annotated, Any

import msgspec
from litestar import Controller, MediaType, Request, Response, get, post
from litestar.di import NamedDependency, Provide
from litestar.exceptions import ValidationException
from litestar.params import JSONBody, PathParameter, QueryParameter
from litestar.status_codes import HTTP_200_OK, HTTP_202_ACCEPTED

from flowdeck.api.dependencies import ID_PATTERN, AppServices, Caller, Cursor, Limit, ObjectId
from flowdeck.api.node_detail_schemas import NodeDetailOut
from flowdeck.api.openapi import SIGNED_IN, errors
from flowdeck.api.pagination import DEFAULT_LIMIT
from flowdeck.api.schemas import EventPage, RetryRun, RunActionOut, RunCountOut, RunDetail, RunPage, TimelinePage
from flowdeck.api.widget_schemas import WidgetDataOut, WidgetTypeName
from flowdeck.domain.labels import label_filters
from flowdeck.domain.statuses import RunStatus
from flowdeck.storage.run_queries import RunFilter

__all__ = ("RunController",)

WorkflowFilter = Annotated[str | None, QueryParameter(name="workflowId", pattern=ID_PATTERN)]
StatusFilter = Annotated[RunStatus | None, QueryParameter(name="status")]
TestFilter = Annotated[bool | None, QueryParameter(name="isTest")]
FromFilter = Annotated[
    float | None, QueryParameter(name="from", ge=0, description="runs created at or after (epoch seconds)")
]
ToFilter = Annotated[float | None, QueryParameter(name="to", ge=0, description="runs created before (epoch seconds)")]
IdPrefixFilter = Annotated[
    str | None,
    QueryParameter(name="idPrefix", pattern=ID_PATTERN, description="runs whose id starts with this (a short id)"),
]
TriggerFilter = Annotated[
    str | None,
    QueryParameter(name="trigger", pattern=r"^[a-z]{1,16}$", description="how runs started (api, webhook ...)"),
]
RunFilters = NamedDependency[RunFilter]
"""The run list's filters, read from the query string by ``run_filter``."""
CallerFilter = Annotated[
    str | None,
    QueryParameter(name="parentInstanceId", pattern=ID_PATTERN, description="runs this run's workflow nodes started"),
]
WidgetType = Annotated[WidgetTypeName, QueryParameter(name="type", description="the widget type")]
WidgetConfigJson = Annotated[
    str, QueryParameter(name="config", max_length=65_536, description="the widget config, as JSON (URL-encoded)")
]


NodeIdPath = Annotated[str, PathParameter(max_length=64, description="the node's id")]
IterationQuery = Annotated[
    str,
    QueryParameter(
        name="iteration", max_length=200, pattern=r"^([0-9]+(\.[0-9]+)*)?$", description="a loop iteration: 3, 3.1"
    ),
]
AttemptQuery = Annotated[
    int | None, QueryParameter(name="attempt", ge=1, le=1_000_000, description="an attempt (default: the latest)")
]
_encoder = msgspec.json.Encoder()


def _json(value: Any) -> Response[bytes]:
    return Response(_encoder.encode(value), media_type=MediaType.JSON)


def run_filter(
    request: Request[Any, Any, Any],
    services: AppServices,
    workflow_id: WorkflowFilter = None,
    status: StatusFilter = None,
    is_test: TestFilter = None,
    created_from: FromFilter = None,
    created_to: ToFilter = None,
    id_prefix: IdPrefixFilter = None,
    trigger: TriggerFilter = None,
    parent_instance_id: CallerFilter = None,
) -> RunFilter:
    """The run list's filters from the query string (the list and its count take the same ones)."""
    if created_from is not None and created_to is not None and created_from > created_to:
        raise ValidationException(detail="from: must not be after to")
    labels = label_filters(request.query_params, services.engine.label_limits)
    return RunFilter(
        workflow_id=workflow_id,
        status=status,
        is_test=is_test,
        created_from=created_from,
        created_to=created_to,
        id_prefix=id_prefix,
        trigger=trigger,
        parent_instance_id=parent_instance_id,
        labels=tuple(labels.items()),
    )


class RunController(Controller):
    path = "/api/runs"
    tags = ["runs"]
    security = SIGNED_IN

    @get(raises=errors(400), dependencies={"filters": Provide(run_filter, sync_to_thread=False)})
    async def list_runs(
        self,
        principal: Caller,
        services: AppServices,
        filters: RunFilters,
        cursor: Cursor = None,
        limit: Limit = DEFAULT_LIMIT,
    ) -> RunPage:
        """Runs, newest first, optionally filtered (``from`` <= created < ``to``, id prefix, caller).

        ``label.<name>=<value>`` (any number, all must match): runs carrying those labels.
        """
        return await services.runs.list(principal.tenant_id, filters, cursor, limit)

    @get("/count", raises=errors(400), dependencies={"filters": Provide(run_filter, sync_to_thread=False)})
    async def count_runs(self, principal: Caller, services: AppServices, filters: RunFilters) -> RunCountOut:
        """How many runs the list's filters match: exact up to 10,000, else ``{count: 10000, more: true}``."""
        return await services.runs.count(principal.tenant_id, filters)

    @get("/{instance_id:str}", raises=errors(400, 404))
    async def get_run(self, instance_id: ObjectId, principal: Caller, services: AppServices) -> RunDetail:
        """The run and the state of each of its nodes (folded from the log)."""
        return await services.runs.detail(principal.tenant_id, instance_id)

    @get("/{instance_id:str}/output", raises=errors(400, 404))
    async def run_output(self, instance_id: ObjectId, principal: Caller, services: AppServices) -> Response[bytes]:
        """The run's output in full (``GET /api/runs/{id}`` shows a large one truncated, linking here)."""
        return _json(await services.runs.full_output(principal.tenant_id, instance_id, None, ""))

    @get("/{instance_id:str}/nodes/{node_id:str}", raises=errors(400, 404))
    async def node_detail(
        self,
        instance_id: ObjectId,
        node_id: NodeIdPath,
        principal: Caller,
        services: AppServices,
        iteration: IterationQuery = "",
        attempt: AttemptQuery = None,
    ) -> NodeDetailOut:
        """One node in one scope (a loop iteration: ``3``, ``3.1``): every attempt, and for one of them (the
        latest by default) the context it started with, the ``ctx`` names its config reads, its output,
        error and logs."""
        return await services.runs.nodes.detail(principal.tenant_id, instance_id, node_id, iteration, attempt)

    @get("/{instance_id:str}/nodes/{node_id:str}/output", raises=errors(400, 404))
    async def node_output(
        self,
        instance_id: ObjectId,
        node_id: NodeIdPath,
        principal: Caller,
        services: AppServices,
        iteration: IterationQuery = "",
    ) -> Response[bytes]:
        """One node's latest output in full, or one loop iteration's (``iteration``: ``3``, ``3.1``); the run's
        views show a large one truncated, linking here."""
        return _json(await services.runs.full_output(principal.tenant_id, instance_id, node_id, iteration))

    @get("/{instance_id:str}/events", raises=errors(400, 404))
    async def run_events(
        self,
        instance_id: ObjectId,
        principal: Caller,
        services: AppServices,
        cursor: Cursor = None,
        limit: Limit = DEFAULT_LIMIT,
    ) -> EventPage:
        """The run's log rows, oldest first."""
        return await services.runs.events(principal.tenant_id, instance_id, cursor, limit)

    @get("/{instance_id:str}/timeline", raises=errors(400, 404))
    async def run_timeline(self, instance_id: ObjectId, principal: Caller, services: AppServices) -> TimelinePage:
        """One row per node attempt (and loop iteration), for a Gantt chart."""
        return await services.runs.timeline(principal.tenant_id, instance_id)

    @post("/{instance_id:str}/cancel", status_code=HTTP_200_OK, raises=errors(400, 404, 409))
    async def cancel_run(self, instance_id: ObjectId, principal: Caller, services: AppServices) -> RunActionOut:
        """Cancel a run that has not finished (a finished one is a 409)."""
        return await services.runs.cancel(principal.tenant_id, instance_id)

    @post("/{instance_id:str}/retry", status_code=HTTP_202_ACCEPTED, raises=errors(400, 404, 409))
    async def retry_run(
        self, instance_id: ObjectId, principal: Caller, services: AppServices, data: JSONBody[RetryRun | None] = None
    ) -> RunActionOut:
        """Partial retry of a FAILED run: only failed and unrun nodes run again; completed outputs are kept.

        ``{"version": "latest"}`` moves the run to the workflow's latest saved version first (completed
        nodes that still exist keep their outputs; the run's ``version`` says which it runs on now);
        ``"original"`` (the default) retries the version it ran.
        """
        version = "original" if data is None else data.version
        return await services.runs.retry(principal.tenant_id, instance_id, version)

    @get("/{instance_id:str}/widget", raises=errors(400, 404))
    async def run_widget(
        self,
        instance_id: ObjectId,
        principal: Caller,
        services: AppServices,
        widget_type: WidgetType,
        config: WidgetConfigJson = "{}",
    ) -> WidgetDataOut:
        """The run's output processed for a widget of ``type`` with ``config`` (the widget builder's preview)."""
        return await services.widget_data.of_run(principal.tenant_id, instance_id, widget_type, config)
