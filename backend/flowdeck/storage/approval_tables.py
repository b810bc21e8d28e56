"""Approval tables (docs/waits.md "Approvals"): one ``approvals`` row per ``wait`` node with ``resumeOn:
"approval"`` and iteration of a run (its rules, beside the node's ``wait_tokens`` row, which still decides
who resolves it), and one ``approval_decisions`` row per person who decided it."""

from __future__ import annotations

import sqlalchemy as sa

from flowdeck.storage.tables import Epoch, Id, Json, metadata

__all__ = ("approval_decisions", "approvals")

approvals = sa.Table(
    "approvals",
    metadata,
    sa.Column("id", Id, primary_key=True),  # the approvalId: not a secret (deciding needs a login)
    sa.Column("tenant_id", Id, nullable=False),
    sa.Column("instance_id", Id, nullable=False),
    sa.Column("node_id", sa.String(64), nullable=False),
    sa.Column("iteration", sa.String(200), nullable=False),
    sa.Column("approvers", Json, nullable=False),  # lower-cased emails; [] = any user of the tenant
    sa.Column("required", sa.Integer, nullable=False),
    sa.Column("allow_self", sa.Boolean, nullable=False),
    sa.Column("created_at", Epoch, nullable=False),
    sa.UniqueConstraint("instance_id", "node_id", "iteration"),
    sa.Index(None, "tenant_id", "created_at"),
)

approval_decisions = sa.Table(
    "approval_decisions",
    metadata,
    sa.Column("approval_id", Id, primary_key=True),
    sa.Column("user_id", Id, primary_key=True),  # one decision per person: a second is refused by the key
    sa.Column("instance_id", Id, nullable=False),
    sa.Column("email", sa.String(320), nullable=False),
    sa.Column("decision", sa.String(8), nullable=False),  # approve | reject
    sa.Column("comment", sa.Text, nullable=True),
    sa.Column("decided_at", Epoch, nullable=False),
    sa.Column("request_mark", sa.String(32), nullable=True),  # the deciding request's mark (api/replay.py)
    sa.Index(None, "instance_id"),
)
