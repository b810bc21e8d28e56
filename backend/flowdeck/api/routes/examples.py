"""``/api/examples``: runnable example workflows, and a new workflow of the tenant made from one."""

from __future__ import annotations

from typing import Annotated

from litestar import Controller, get, post
from litestar.params import PathParameter
from litestar.status_codes import HTTP_201_CREATED

from flowdeck.api.dependencies import ID_PATTERN, AppServices, Caller
from flowdeck.api.openapi import SIGNED_IN, errors
from flowdeck.api.schemas import ExamplePage, WorkflowOut
from flowdeck.api.services.examples import ExampleService

__all__ = ("ExampleController",)

ExampleId = Annotated[str, PathParameter(pattern=ID_PATTERN, description="an example's id (GET /api/examples)")]


class ExampleController(Controller):
    path = "/api/examples"
    tags = ["examples"]
    security = SIGNED_IN

    @get(raises=errors())
    async def list_examples(self, principal: Caller, services: AppServices) -> ExamplePage:
        """The examples a new workflow can start from, each with a sample input."""
        return ExampleService(services.workflows, services.data).list()

    @post("/{example_id:str}", status_code=HTTP_201_CREATED, raises=errors(400, 404, 409))
    async def start_from_example(self, example_id: ExampleId, principal: Caller, services: AppServices) -> WorkflowOut:
        """A new workflow made from the example (the data-query one also gets its data source and saved query)."""
        return await ExampleService(services.workflows, services.data).start(principal.tenant_id, example_id)
