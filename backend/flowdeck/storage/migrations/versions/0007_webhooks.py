"""Webhook secrets of workflows (SPEC §8 triggers).

Revision ID: 0007
Revises: 0006
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0007"
down_revision: str | None = "0006"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "workflow_webhooks",
        sa.Column("workflow_id", sa.String(length=36), nullable=False),
        sa.Column("tenant_id", sa.String(length=36), nullable=False),
        sa.Column("secret_hash", sa.String(length=64), nullable=False),
        sa.Column("created_at", sa.Double(), nullable=False),
        sa.Column("last_used_at", sa.Double(), nullable=True),
        sa.ForeignKeyConstraint(["tenant_id"], ["tenants.id"], name=op.f("fk_workflow_webhooks_tenant_id_tenants")),
        sa.ForeignKeyConstraint(
            ["workflow_id"], ["workflows.id"], name=op.f("fk_workflow_webhooks_workflow_id_workflows")
        ),
        sa.PrimaryKeyConstraint("workflow_id", name=op.f("pk_workflow_webhooks")),
    )


def downgrade() -> None:
    op.drop_table("workflow_webhooks")
