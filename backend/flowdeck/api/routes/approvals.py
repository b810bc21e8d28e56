"""``/api/approvals``: approval waits the caller may decide, and their decisions (docs/waits.md "Approvals").

A session or an API token decides as its user (tokens carry their user's authority). Another tenant's
approval, or an unknown id, is a 404; a user who may not decide it (not among its approvers, or who
started the run without ``allowSelfApproval``) a 403; a second decision of the same user, or a decision
of an approval no longer pending, a 409.
"""

from __future__ import annotations

from litestar import Controller, get, post
from litestar.params import JSONBody
from litestar.status_codes import HTTP_200_OK

from flowdeck.api.approval_schemas import ApprovalDecisionIn, ApprovalOut, ApprovalPage
from flowdeck.api.dependencies import AppServices, Caller, Cursor, Limit, ObjectId
from flowdeck.api.openapi import SIGNED_IN, errors
from flowdeck.api.pagination import DEFAULT_LIMIT

__all__ = ("ApprovalController",)


class ApprovalController(Controller):
    path = "/api/approvals"
    tags = ["approvals"]
    security = SIGNED_IN

    @get(raises=errors(400))
    async def list_approvals(
        self, principal: Caller, services: AppServices, cursor: Cursor = None, limit: Limit = DEFAULT_LIMIT
    ) -> ApprovalPage:
        """The pending approvals the caller may decide (not the ones they decided or may not decide), oldest first."""
        return await services.approvals.pending(principal, cursor, limit)

    @get("/{approval_id:str}", raises=errors(400, 404))
    async def get_approval(self, approval_id: ObjectId, principal: Caller, services: AppServices) -> ApprovalOut:
        """One approval of the tenant, pending or not, with whether the caller may decide it and why not."""
        return await services.approvals.get(principal, approval_id)

    @post("/{approval_id:str}", status_code=HTTP_200_OK, raises=errors(400, 404, 409))
    async def decide(
        self, approval_id: ObjectId, data: JSONBody[ApprovalDecisionIn], principal: Caller, services: AppServices
    ) -> ApprovalOut:
        """Approve or reject: the ``required``-th approval resumes the node on ``success``, the first rejection
        on ``rejected``. 403 for a user who may not decide it; 409 when they decided already or it is no
        longer pending."""
        return await services.approvals.decide(principal, approval_id, data)
