"""Example workflows: list them, and make one a workflow of the tenant (with its data source and query)."""

from __future__ import annotations

from typing import Any

from litestar.exceptions import NotFoundException

from flowdeck.api.openapi import ConflictException
from flowdeck.api.schemas import ExampleOut, ExamplePage, WorkflowOut
from flowdeck.api.services.workflows import WorkflowService
from flowdeck.examples import EXAMPLES, ExampleQuery, example
from flowdeck.queries.service import DataService

__all__ = ("ExampleService",)


class ExampleService:
    def __init__(self, workflows: WorkflowService, data: DataService) -> None:
        self.workflows = workflows
        self.data = data

    def list(self) -> ExamplePage:
        return ExamplePage(
            items=[ExampleOut(id=e.id, title=e.title, description=e.description, input=e.input) for e in EXAMPLES]
        )

    async def start(self, tenant_id: str, example_id: str) -> WorkflowOut:
        """A new workflow of the tenant made from the example (201); its data source and query are reused."""
        found = example(example_id)
        if found is None:
            raise NotFoundException(detail=f"example {example_id} not found")
        definition = found.definition()
        if found.query is not None:
            query_id = await self._saved_query(tenant_id, found.query)
            for node in definition["nodes"]:
                if node["id"] == found.query.node_id:
                    node["config"]["queryId"] = query_id
        record = await self.workflows.engine.create_workflow(tenant_id, definition)
        return await self.workflows.get(tenant_id, record.id)

    async def _saved_query(self, tenant_id: str, spec: ExampleQuery) -> str:
        store = self.data.store
        config = {"url": spec.source_url}
        sources = await store.list_sources(tenant_id, after=(spec.source_name, ""), limit=1)
        source = sources[0] if sources and sources[0].name == spec.source_name else None
        if source is None:
            source_id = str((await self.data.create_data_source(tenant_id, _source_body(spec, config)))["id"])
        elif source.kind == "sql" and source.config == config:
            source_id = source.id
        else:
            raise ConflictException(
                detail=f"a data source named {spec.source_name!r} already exists and points elsewhere: rename it"
            )
        queries = await store.list_queries(tenant_id, after=(spec.name, ""), limit=1)
        query = queries[0] if queries and queries[0].name == spec.name else None
        if query is None:
            body = {"name": spec.name, "dataSourceId": source_id, "parameters": list(spec.parameters), "sql": spec.sql}
            return str((await self.data.create_query(tenant_id, body))["id"])
        if query.data_source_id == source_id and query.definition.get("sql") == spec.sql:
            return query.id
        raise ConflictException(detail=f"a saved query named {spec.name!r} already exists and differs: rename it")


def _source_body(spec: ExampleQuery, config: dict[str, Any]) -> dict[str, Any]:
    return {"name": spec.source_name, "kind": "sql", "config": config}
