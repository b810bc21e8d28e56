"""The queue knows each job's tenant (fair claims) and counts lease takeovers.

``node_jobs.tenant_id`` is filled from the run's instance for the jobs already queued;
``node_jobs.takeovers`` starts at 0.

Revision ID: 0010
Revises: 0009
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0010"
down_revision: str | None = "0009"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("node_jobs", schema=None) as batch_op:
        batch_op.add_column(sa.Column("tenant_id", sa.String(length=36), server_default="", nullable=False))
        batch_op.add_column(sa.Column("takeovers", sa.Integer(), server_default="0", nullable=False))
        batch_op.create_index(batch_op.f("ix_node_jobs_tenant_available"), ["tenant_id", "available_at"], unique=False)
    op.execute(
        "UPDATE node_jobs SET tenant_id = (SELECT instances.tenant_id FROM instances"
        " WHERE instances.id = node_jobs.instance_id)"
        " WHERE EXISTS (SELECT 1 FROM instances WHERE instances.id = node_jobs.instance_id)"
    )


def downgrade() -> None:
    with op.batch_alter_table("node_jobs", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_node_jobs_tenant_available"))
        batch_op.drop_column("takeovers")
        batch_op.drop_column("tenant_id")
