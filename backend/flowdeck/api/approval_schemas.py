"""Request and response bodies of ``/api/approvals`` (docs/waits.md "Approvals"), camelCase on the wire."""

from __future__ import annotations

from typing import Literal

from flowdeck.api.schemas import Body, Camel, DecisionOut

__all__ = ("ApprovalDecisionIn", "ApprovalOut", "ApprovalPage", "DecisionOut")


class ApprovalOut(Camel):
    """A ``wait`` node with ``resumeOn: "approval"`` of a run (one loop iteration of it)."""

    id: str
    instance_id: str
    workflow_id: str | None
    workflow_title: str | None
    node_id: str
    node_label: str
    iteration: str
    is_test: bool
    requested_by: str | None
    """The email of the user who started the run (none for a webhook or schedule start)."""
    until: float | None
    """When its ``timeoutSeconds`` pass (epoch seconds)."""
    required: int
    approvers: list[str]
    """Who may decide (emails); empty: any user of the tenant."""
    decisions: list[DecisionOut]
    status: Literal["pending", "approved", "rejected", "closed"]
    """``closed``: it timed out, or its run ended before it was decided."""
    can_decide: bool
    """Whether the caller may decide it now."""
    cannot_decide_because: str | None = None


class ApprovalPage(Camel):
    items: list[ApprovalOut]
    next_cursor: str | None


class ApprovalDecisionIn(Body):
    decision: Literal["approve", "reject"]
    comment: str | None = None
