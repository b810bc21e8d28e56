"""``/api/approvals``: the pending approvals a user may decide, one approval, and a decision (docs/waits.md)."""

from __future__ import annotations

from typing import Literal

from litestar.exceptions import HTTPException, NotFoundException, PermissionDeniedException
from litestar.status_codes import HTTP_409_CONFLICT

from flowdeck.accounts.principal import Principal
from flowdeck.api.approval_schemas import ApprovalDecisionIn, ApprovalOut, ApprovalPage, DecisionOut
from flowdeck.api.pagination import TimeKey, decode_cursor, encode_cursor
from flowdeck.domain.approvals import Refusal
from flowdeck.engine.engine import Engine
from flowdeck.engine.plans import RunNotFoundError
from flowdeck.storage.approvals import ApprovalRow, Decider, shown_decisions

__all__ = ("ApprovalService",)

Status = Literal["pending", "approved", "rejected", "closed"]
_BATCH = 200
_CLOSED = "this approval is no longer pending: it was decided, timed out, or its run ended"


def _decider(principal: Principal) -> Decider:
    return Decider(principal.user_id, principal.email.lower())


class ApprovalService:
    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    async def _label(self, row: ApprovalRow) -> str:
        try:
            node = (await self.engine.plans.get(row.instance_id)).graph.node(row.node_id)
        except (RunNotFoundError, KeyError):
            return row.node_id
        return node.label or node.id

    async def _out(self, row: ApprovalRow, principal: Principal) -> ApprovalOut:
        refused = row.refusal(_decider(principal)) if row.pending else None
        decisions = shown_decisions(row.decisions)
        status: Status = "pending" if row.pending else "closed"
        if row.resolution is not None:
            status = "rejected" if row.resolution == "reject" else "approved"
        return ApprovalOut(
            id=row.id,
            instance_id=row.instance_id,
            workflow_id=row.workflow_id,
            workflow_title=row.workflow_title,
            node_id=row.node_id,
            node_label=await self._label(row),
            iteration=row.iteration,
            is_test=row.is_test,
            requested_by=row.requested_by_email,
            until=row.until,
            required=row.rule.required,
            approvers=list(row.rule.approvers),
            decisions=[DecisionOut(**d) for d in decisions],
            status=status,
            can_decide=row.pending and refused is None,
            cannot_decide_because=(refused.message if refused else None) if row.pending else _CLOSED,
        )

    async def pending(self, principal: Principal, cursor: str | None, limit: int) -> ApprovalPage:
        """A page of the pending approvals the caller may decide: the tenant's pending ones are read in
        batches, oldest first, and filtered by the one rule of who may decide (domain/approvals.py)."""
        after: tuple[float, str] | None = decode_cursor(cursor, TimeKey)
        decider, more = _decider(principal), True
        mine: list[ApprovalRow] = []
        while more and len(mine) <= limit:
            rows = await self.engine.approvals.pending(principal.tenant_id, after, _BATCH)
            more = len(rows) == _BATCH
            for row in rows:
                after = (row.created_at, row.id)
                if row.refusal(decider) is None:
                    mine.append(row)
                    if len(mine) > limit:
                        break
        page = mine[:limit]
        next_cursor = encode_cursor((page[-1].created_at, page[-1].id)) if len(mine) > limit else None
        return ApprovalPage(items=[await self._out(row, principal) for row in page], next_cursor=next_cursor)

    async def get(self, principal: Principal, approval_id: str) -> ApprovalOut:
        row = await self.engine.approvals.get(principal.tenant_id, approval_id)
        if row is None:
            raise NotFoundException(detail=f"approval {approval_id} not found")
        return await self._out(row, principal)

    async def decide(self, principal: Principal, approval_id: str, data: ApprovalDecisionIn) -> ApprovalOut:
        row = await self.engine.approvals.get(principal.tenant_id, approval_id)
        if row is None:
            raise NotFoundException(detail=f"approval {approval_id} not found")
        comment = (data.comment or "").strip() or None
        answer, row = await self.engine.decide_approval(row, _decider(principal), data.decision, comment)
        if isinstance(answer, Refusal):
            if answer.kind == "decided":
                raise HTTPException(status_code=HTTP_409_CONFLICT, detail=answer.message)
            raise PermissionDeniedException(detail=answer.message)
        if answer == "closed":
            raise HTTPException(status_code=HTTP_409_CONFLICT, detail=_CLOSED)
        return await self._out(row, principal)
