"""SLA deadlines on instances, the notification outbox and the per-workflow notification secrets.

Revision ID: 0009
Revises: 0008
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0009"
down_revision: str | None = "0008"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("instances", schema=None) as batch_op:
        batch_op.add_column(sa.Column("sla_at", sa.Double(), nullable=True))
        batch_op.add_column(sa.Column("sla_breached_at", sa.Double(), nullable=True))
        batch_op.create_index(batch_op.f("ix_instances_status_sla_at"), ["status", "sla_at"], unique=False)
    op.create_table(
        "run_notices",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), autoincrement=True, nullable=False),
        sa.Column("tenant_id", sa.String(length=36), nullable=False),
        sa.Column("instance_id", sa.String(length=36), nullable=False),
        sa.Column("workflow_id", sa.String(length=36), nullable=True),
        sa.Column("event", sa.String(length=16), nullable=False),
        sa.Column("payload", sa.JSON().with_variant(sa.dialects.postgresql.JSONB(), "postgresql"), nullable=True),
        sa.Column("attempts", sa.Integer(), server_default="0", nullable=False),
        sa.Column("available_at", sa.Double(), nullable=False),
        sa.Column("created_at", sa.Double(), nullable=False),
        sa.Column("last_error", sa.Text(), nullable=True),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_run_notices")),
    )
    with op.batch_alter_table("run_notices", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_run_notices_available_at"), ["available_at"], unique=False)
    op.create_table(
        "notification_secrets",
        sa.Column("workflow_id", sa.String(length=36), nullable=False),
        sa.Column("tenant_id", sa.String(length=36), nullable=False),
        sa.Column("secret_enc", sa.Text(), nullable=False),
        sa.Column("created_at", sa.Double(), nullable=False),
        sa.Column("shown_at", sa.Double(), nullable=True),
        sa.ForeignKeyConstraint(["tenant_id"], ["tenants.id"], name=op.f("fk_notification_secrets_tenant_id_tenants")),
        sa.ForeignKeyConstraint(
            ["workflow_id"], ["workflows.id"], name=op.f("fk_notification_secrets_workflow_id_workflows")
        ),
        sa.PrimaryKeyConstraint("workflow_id", name=op.f("pk_notification_secrets")),
    )


def downgrade() -> None:
    op.drop_table("notification_secrets")
    with op.batch_alter_table("run_notices", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_run_notices_available_at"))
    op.drop_table("run_notices")
    with op.batch_alter_table("instances", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_instances_status_sla_at"))
        batch_op.drop_column("sla_breached_at")
        batch_op.drop_column("sla_at")
