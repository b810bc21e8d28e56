"""Approvals: who started a run (``instances.requested_by``), each approval wait's rules and its decisions.

Revision ID: 0017
Revises: 0016
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects.postgresql import JSONB

revision: str = "0017"
down_revision: str | None = "0016"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("instances") as batch_op:
        batch_op.add_column(sa.Column("requested_by", sa.String(length=36), nullable=True))
    op.create_table(
        "approvals",
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("tenant_id", sa.String(length=36), nullable=False),
        sa.Column("instance_id", sa.String(length=36), nullable=False),
        sa.Column("node_id", sa.String(length=64), nullable=False),
        sa.Column("iteration", sa.String(length=200), nullable=False),
        sa.Column("approvers", sa.JSON().with_variant(JSONB(), "postgresql"), nullable=False),
        sa.Column("required", sa.Integer(), nullable=False),
        sa.Column("allow_self", sa.Boolean(), nullable=False),
        sa.Column("created_at", sa.Double(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_approvals")),
        sa.UniqueConstraint(
            "instance_id", "node_id", "iteration", name=op.f("uq_approvals_instance_id_node_id_iteration")
        ),
    )
    op.create_index(op.f("ix_approvals_tenant_id_created_at"), "approvals", ["tenant_id", "created_at"])
    op.create_table(
        "approval_decisions",
        sa.Column("approval_id", sa.String(length=36), nullable=False),
        sa.Column("user_id", sa.String(length=36), nullable=False),
        sa.Column("instance_id", sa.String(length=36), nullable=False),
        sa.Column("email", sa.String(length=320), nullable=False),
        sa.Column("decision", sa.String(length=8), nullable=False),
        sa.Column("comment", sa.Text(), nullable=True),
        sa.Column("decided_at", sa.Double(), nullable=False),
        sa.PrimaryKeyConstraint("approval_id", "user_id", name=op.f("pk_approval_decisions")),
    )
    op.create_index(op.f("ix_approval_decisions_instance_id"), "approval_decisions", ["instance_id"])


def downgrade() -> None:
    op.drop_index(op.f("ix_approval_decisions_instance_id"), table_name="approval_decisions")
    op.drop_table("approval_decisions")
    op.drop_index(op.f("ix_approvals_tenant_id_created_at"), table_name="approvals")
    op.drop_table("approvals")
    with op.batch_alter_table("instances") as batch_op:
        batch_op.drop_column("requested_by")
