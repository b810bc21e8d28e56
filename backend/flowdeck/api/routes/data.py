"""``/api/data-sources`` and ``/api/queries`` (SPEC §6): connections and saved queries, and a preview.

Secrets go in and never come out: a data source shows ``secrets: {name: "set"}``.
"""

from __future__ import annotations

from typing import Annotated, Any

from litestar import Controller, delete, get, post, put
from litestar.params import JSONBody, PathParameter, QueryParameter
from litestar.status_codes import HTTP_200_OK, HTTP_201_CREATED, HTTP_204_NO_CONTENT

from flowdeck.api.dependencies import ID_PATTERN, AppServices, Caller, Cursor, Limit
from flowdeck.api.openapi import errors
from flowdeck.api.pagination import DEFAULT_LIMIT

__all__ = ("DataSourceController", "QueryController")

SourceId = Annotated[str, PathParameter(pattern=ID_PATTERN, description="a data source id")]
QueryId = Annotated[str, PathParameter(pattern=ID_PATTERN, description="a saved query id")]
SourceFilter = Annotated[str | None, QueryParameter(pattern=ID_PATTERN, description="only this data source's queries")]


class DataSourceController(Controller):
    path = "/api/data-sources"
    tags = ["data sources"]

    @get(raises=errors(400))
    async def list_data_sources(
        self, principal: Caller, services: AppServices, cursor: Cursor = None, limit: Limit = DEFAULT_LIMIT
    ) -> dict[str, Any]:
        """The tenant's data sources, by name (``{items, nextCursor}``)."""
        return await services.data.list_data_sources(principal.tenant_id, cursor=cursor, limit=limit)

    @get("/rules")
    async def data_source_rules(self, principal: Caller, services: AppServices) -> dict[str, Any]:
        """Where data sources may point on this server: ``{sqliteDirectories}`` (``FLOWDECK_SQLITE_DIRS`` as set;
        empty: SQLite files are refused, apart from the built-in example's)."""
        del principal  # any signed-in caller; the directories are the same for every tenant
        return services.data.rules()

    @post(status_code=HTTP_201_CREATED, raises=errors(400, 409, 413))
    async def create_data_source(
        self, data: JSONBody[dict[str, Any]], principal: Caller, services: AppServices
    ) -> dict[str, Any]:
        """``{name, kind: sql|http, config, secrets?}``: an SQLAlchemy async URL, or a base URL and headers."""
        return await services.data.create_data_source(principal.tenant_id, data)

    @post("/test", status_code=HTTP_200_OK, raises=errors(400, 413))
    async def test_data_source(
        self, data: JSONBody[dict[str, Any]], principal: Caller, services: AppServices
    ) -> dict[str, Any]:
        """Try an unsaved data source (a body as for create): ``{ok, message, latencyMs}``.

        Connects exactly as a query would (every guard applies); SQL runs ``SELECT 1``, HTTP sends
        ``GET`` to the base URL (``ok`` when it answers below 400). An invalid or refused config is a 400.
        """
        return await services.data.test_data_source(principal.tenant_id, data)

    @post("/{source_id:str}/test", status_code=HTTP_200_OK, raises=errors(400, 404))
    async def test_saved_data_source(
        self, source_id: SourceId, principal: Caller, services: AppServices
    ) -> dict[str, Any]:
        """Try a saved data source as stored: ``{ok, message, latencyMs}``."""
        return await services.data.test_saved_data_source(principal.tenant_id, source_id)

    @get("/{source_id:str}", raises=errors(400, 404))
    async def get_data_source(self, source_id: SourceId, principal: Caller, services: AppServices) -> dict[str, Any]:
        return await services.data.get_data_source(principal.tenant_id, source_id)

    @put("/{source_id:str}", raises=errors(400, 404, 409, 413))
    async def update_data_source(
        self, source_id: SourceId, data: JSONBody[dict[str, Any]], principal: Caller, services: AppServices
    ) -> dict[str, Any]:
        """Change name, config or secrets (a secret set to ``null`` is removed; ``"set"`` keeps it)."""
        return await services.data.update_data_source(principal.tenant_id, source_id, data)

    @delete("/{source_id:str}", status_code=HTTP_204_NO_CONTENT, raises=errors(400, 404, 409))
    async def delete_data_source(self, source_id: SourceId, principal: Caller, services: AppServices) -> None:
        """Delete a data source that no saved query uses any more (else 409 naming them)."""
        await services.data.delete_data_source(principal.tenant_id, source_id)


class QueryController(Controller):
    path = "/api/queries"
    tags = ["queries"]

    @get(raises=errors(400))
    async def list_queries(
        self,
        principal: Caller,
        services: AppServices,
        data_source_id: SourceFilter = None,
        cursor: Cursor = None,
        limit: Limit = DEFAULT_LIMIT,
    ) -> dict[str, Any]:
        """The tenant's saved queries, by name (``?dataSourceId=`` narrows them to one source)."""
        return await services.data.list_queries(
            principal.tenant_id, data_source_id=data_source_id, cursor=cursor, limit=limit
        )

    @post(status_code=HTTP_201_CREATED, raises=errors(400, 404, 409, 413))
    async def create_query(
        self, data: JSONBody[dict[str, Any]], principal: Caller, services: AppServices
    ) -> dict[str, Any]:
        """``{name, dataSourceId, parameters, sql}`` or ``{…, method, path, query, body, headers}``."""
        return await services.data.create_query(principal.tenant_id, data)

    @get("/{query_id:str}", raises=errors(400, 404))
    async def get_query(self, query_id: QueryId, principal: Caller, services: AppServices) -> dict[str, Any]:
        return await services.data.get_query(principal.tenant_id, query_id)

    @put("/{query_id:str}", raises=errors(400, 404, 409, 413))
    async def update_query(
        self, query_id: QueryId, data: JSONBody[dict[str, Any]], principal: Caller, services: AppServices
    ) -> dict[str, Any]:
        return await services.data.update_query(principal.tenant_id, query_id, data)

    @delete("/{query_id:str}", status_code=HTTP_204_NO_CONTENT, raises=errors(400, 404))
    async def delete_query(self, query_id: QueryId, principal: Caller, services: AppServices) -> None:
        await services.data.delete_query(principal.tenant_id, query_id)

    @post("/{query_id:str}/preview", status_code=HTTP_200_OK, raises=errors(400, 404, 413, 502))
    async def preview_query(
        self, query_id: QueryId, data: JSONBody[dict[str, Any]], principal: Caller, services: AppServices
    ) -> dict[str, Any]:
        """Run the query now with ``{args}``: SQL gives ``{rows, rowCount, columns}``, HTTP ``{status, headers, body}``.

        A bad argument or statement is a 400 naming it; an unreachable source a 502.
        """
        return await services.data.preview(principal.tenant_id, query_id, data.get("args"))
