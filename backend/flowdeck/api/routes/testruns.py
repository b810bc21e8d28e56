"""``/api/test-runs``: run an unsaved graph from the editor, and throw the run away afterwards."""

from __future__ import annotations

from litestar import Controller, delete, post
from litestar.params import JSONBody
from litestar.status_codes import HTTP_202_ACCEPTED, HTTP_204_NO_CONTENT

from flowdeck.api.dependencies import AppServices, Caller, ObjectId
from flowdeck.api.openapi import SIGNED_IN, errors
from flowdeck.api.schemas import RunAccepted, StartTestRun

__all__ = ("TestRunController",)


class TestRunController(Controller):
    __test__ = False  # not a pytest test class, whatever its name

    path = "/api/test-runs"
    tags = ["test runs"]
    security = SIGNED_IN

    @post(status_code=HTTP_202_ACCEPTED, raises=errors(400, 413, 429))
    async def start_test_run(
        self, data: JSONBody[StartTestRun], principal: Caller, services: AppServices
    ) -> RunAccepted:
        """Run the graph in the body (stored with the run); ``pinned`` nodes complete at once with the given output."""
        return RunAccepted(instance_id=await services.runs.start_test(principal.tenant_id, data, principal.user_id))

    @delete("/{instance_id:str}", status_code=HTTP_204_NO_CONTENT, raises=errors(400, 404))
    async def delete_test_run(self, instance_id: ObjectId, principal: Caller, services: AppServices) -> None:
        """Stop the test run's in-flight work and delete every row of it."""
        await services.runs.delete_test(principal.tenant_id, instance_id)
