"""``/api/widgets``: widgets of the tenant's workflows, their data, and their embed tokens (docs/widgets.md)."""

from __future__ import annotations

from typing import Annotated, Any

from litestar import Controller, Request, delete, get, post, put
from litestar.params import JSONBody, PathParameter, QueryParameter
from litestar.status_codes import HTTP_201_CREATED, HTTP_204_NO_CONTENT

from flowdeck.api.dependencies import ID_PATTERN, AppServices, Caller, Cursor, Limit, ObjectId
from flowdeck.api.openapi import SIGNED_IN, errors
from flowdeck.api.pagination import DEFAULT_LIMIT
from flowdeck.api.services.widget_data import Query
from flowdeck.api.widget_schemas import (
    EmbedTokenCreate,
    EmbedTokenCreated,
    EmbedTokenPage,
    WidgetDataOut,
    WidgetIn,
    WidgetOut,
    WidgetPage,
)

__all__ = ("WidgetController", "query_of")

WorkflowFilter = Annotated[str | None, QueryParameter(name="workflowId", pattern=ID_PATTERN)]
WidgetId = Annotated[str, PathParameter(pattern=ID_PATTERN, description="a widget id")]


def query_of(request: Request[Any, Any, Any]) -> Query:
    """Every query parameter with all its values (a sync widget's run input is built from them)."""
    query: dict[str, list[str]] = {}
    for name, value in request.query_params.multi_items():
        query.setdefault(name, []).append(value)
    return query


class WidgetController(Controller):
    path = "/api/widgets"
    tags = ["widgets"]
    security = SIGNED_IN

    @get(raises=errors(400))
    async def list_widgets(
        self,
        principal: Caller,
        services: AppServices,
        workflow_id: WorkflowFilter = None,
        cursor: Cursor = None,
        limit: Limit = DEFAULT_LIMIT,
    ) -> WidgetPage:
        """The tenant's widgets, most recently saved first (``?workflowId=`` narrows them to one workflow)."""
        return await services.widgets.list(principal.tenant_id, workflow_id, cursor, limit)

    @post(status_code=HTTP_201_CREATED, raises=errors(400, 404, 413))
    async def create_widget(self, data: JSONBody[WidgetIn], principal: Caller, services: AppServices) -> WidgetOut:
        """A widget of one of the tenant's workflows; a bad config is a 400 naming the field."""
        return await services.widgets.create(principal.tenant_id, data)

    @get("/{widget_id:str}", raises=errors(400, 404))
    async def get_widget(self, widget_id: WidgetId, principal: Caller, services: AppServices) -> WidgetOut:
        return await services.widgets.get(principal.tenant_id, widget_id)

    @put("/{widget_id:str}", raises=errors(400, 404, 413))
    async def update_widget(
        self, widget_id: WidgetId, data: JSONBody[WidgetIn], principal: Caller, services: AppServices
    ) -> WidgetOut:
        """Save the whole widget (its embed tokens stay valid)."""
        return await services.widgets.update(principal.tenant_id, widget_id, data)

    @delete("/{widget_id:str}", status_code=HTTP_204_NO_CONTENT, raises=errors(400, 404))
    async def delete_widget(self, widget_id: WidgetId, principal: Caller, services: AppServices) -> None:
        """Delete the widget and its embed tokens."""
        await services.widgets.delete(principal.tenant_id, widget_id)

    @get("/{widget_id:str}/data", raises=errors(400, 404))
    async def widget_data(
        self, widget_id: WidgetId, request: Request[Any, Any, Any], principal: Caller, services: AppServices
    ) -> WidgetDataOut:
        """Replay: the latest COMPLETED production run's output, processed. Sync: query parameters feed a new run."""
        widget = await services.widgets.require(principal.tenant_id, widget_id)
        return await services.widget_data.of_widget(widget, query_of(request))

    @post("/{widget_id:str}/embed-tokens", status_code=HTTP_201_CREATED, raises=errors(400, 404, 413))
    async def create_embed_token(
        self,
        widget_id: WidgetId,
        principal: Caller,
        services: AppServices,
        data: JSONBody[EmbedTokenCreate | None] = None,
    ) -> EmbedTokenCreated:
        """A token that opens ``/embed/<token>`` for this widget only; ``token`` is shown only in this answer."""
        days = (data or EmbedTokenCreate()).expires_in_days
        return await services.widgets.create_token(principal.tenant_id, widget_id, days)

    @get("/{widget_id:str}/embed-tokens", raises=errors(400, 404))
    async def list_embed_tokens(self, widget_id: WidgetId, principal: Caller, services: AppServices) -> EmbedTokenPage:
        """Every embed token of the widget, newest first (no secrets)."""
        return await services.widgets.list_tokens(principal.tenant_id, widget_id)

    @delete("/{widget_id:str}/embed-tokens/{token_id:str}", status_code=HTTP_204_NO_CONTENT, raises=errors(400, 404))
    async def revoke_embed_token(
        self, widget_id: WidgetId, token_id: ObjectId, principal: Caller, services: AppServices
    ) -> None:
        """Revoke at once: the embed page and its data answer 410 from now on."""
        await services.widgets.revoke_token(principal.tenant_id, widget_id, token_id)
