"""initial schema

Revision ID: 0001
Revises:
Create Date: 2026-11-21 06:20:57.886103
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0001"
down_revision: str | None = None
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "instance_logs",
        sa.Column("log_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), autoincrement=True, nullable=False),
        sa.Column("instance_id", sa.String(length=36), nullable=False),
        sa.Column("node_id", sa.String(length=64), nullable=True),
        sa.Column("iteration", sa.String(length=200), server_default="", nullable=False),
        sa.Column("event_type", sa.String(length=20), nullable=False),
        sa.Column("node_status", sa.String(length=16), nullable=True),
        sa.Column("output_variable", sa.String(length=64), nullable=True),
        sa.Column(
            "payload", sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql"), nullable=True
        ),
        sa.Column("error_message", sa.Text(), nullable=True),
        sa.Column("node_attempt", sa.Integer(), server_default="0", nullable=False),
        sa.Column("created_at", sa.Double(), nullable=False),
        sa.PrimaryKeyConstraint("log_id", name=op.f("pk_instance_logs")),
    )
    with op.batch_alter_table("instance_logs", schema=None) as batch_op:
        batch_op.create_index("ix_instance_logs_instance_event", ["instance_id", "event_type"], unique=False)
        batch_op.create_index("ix_instance_logs_instance_log", ["instance_id", "log_id"], unique=False)
        batch_op.create_index(
            "uq_instance_logs_node_event",
            ["instance_id", "node_id", "iteration", "event_type", "node_attempt"],
            unique=True,
        )

    op.create_table(
        "join_barriers",
        sa.Column("instance_id", sa.String(length=36), nullable=False),
        sa.Column("node_id", sa.String(length=64), nullable=False),
        sa.Column("iteration", sa.String(length=200), nullable=False),
        sa.Column("resolved_edges", sa.Integer(), nullable=False),
        sa.Column("taken_edges", sa.Integer(), nullable=False),
        sa.PrimaryKeyConstraint("instance_id", "node_id", "iteration", name=op.f("pk_join_barriers")),
    )
    op.create_table(
        "node_jobs",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), autoincrement=True, nullable=False),
        sa.Column("instance_id", sa.String(length=36), nullable=False),
        sa.Column("node_id", sa.String(length=64), nullable=False),
        sa.Column("iteration", sa.String(length=200), server_default="", nullable=False),
        sa.Column("attempt", sa.Integer(), nullable=False),
        sa.Column("retry_base", sa.Integer(), server_default="1", nullable=False),
        sa.Column("available_at", sa.Double(), nullable=False),
        sa.Column("lease_owner", sa.String(length=64), nullable=True),
        sa.Column("created_at", sa.Double(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_node_jobs")),
    )
    with op.batch_alter_table("node_jobs", schema=None) as batch_op:
        batch_op.create_index("ix_node_jobs_available", ["available_at"], unique=False)
        batch_op.create_index("ix_node_jobs_lease_owner", ["lease_owner"], unique=False)
        batch_op.create_index("uq_node_jobs_node", ["instance_id", "node_id", "iteration"], unique=True)

    op.create_table(
        "tenants",
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("name", sa.String(length=200), nullable=False),
        sa.Column("created_at", sa.Double(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_tenants")),
        sa.UniqueConstraint("name", name=op.f("uq_tenants_name")),
    )
    op.create_table(
        "instances",
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("tenant_id", sa.String(length=36), nullable=False),
        sa.Column("workflow_id", sa.String(length=36), nullable=True),
        sa.Column("workflow_version", sa.Integer(), nullable=True),
        sa.Column("is_test", sa.Boolean(), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("trigger", sa.String(length=16), nullable=False),
        sa.Column(
            "input", sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql"), nullable=True
        ),
        sa.Column(
            "output", sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql"), nullable=True
        ),
        sa.Column("error", sa.Text(), nullable=True),
        sa.Column("created_at", sa.Double(), nullable=False),
        sa.Column("started_at", sa.Double(), nullable=True),
        sa.Column("completed_at", sa.Double(), nullable=True),
        sa.Column("updated_at", sa.Double(), nullable=False),
        sa.Column("deadline_at", sa.Double(), nullable=True),
        sa.ForeignKeyConstraint(["tenant_id"], ["tenants.id"], name=op.f("fk_instances_tenant_id_tenants")),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_instances")),
    )
    with op.batch_alter_table("instances", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_instances_status_deadline_at"), ["status", "deadline_at"], unique=False)
        batch_op.create_index(
            batch_op.f("ix_instances_tenant_id_created_at"), ["tenant_id", "created_at"], unique=False
        )
        batch_op.create_index(
            batch_op.f("ix_instances_workflow_id_status_created_at"),
            ["workflow_id", "status", "created_at"],
            unique=False,
        )

    op.create_table(
        "workflows",
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("tenant_id", sa.String(length=36), nullable=False),
        sa.Column("title", sa.String(length=200), nullable=False),
        sa.Column("description", sa.Text(), nullable=True),
        sa.Column("latest_version", sa.Integer(), nullable=False),
        sa.Column("created_at", sa.Double(), nullable=False),
        sa.Column("updated_at", sa.Double(), nullable=False),
        sa.Column("deleted_at", sa.Double(), nullable=True),
        sa.ForeignKeyConstraint(["tenant_id"], ["tenants.id"], name=op.f("fk_workflows_tenant_id_tenants")),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_workflows")),
    )
    with op.batch_alter_table("workflows", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_workflows_tenant_id_updated_at"), ["tenant_id", "updated_at"], unique=False
        )

    op.create_table(
        "workflow_versions",
        sa.Column("workflow_id", sa.String(length=36), nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column(
            "definition", sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql"), nullable=False
        ),
        sa.Column("created_at", sa.Double(), nullable=False),
        sa.ForeignKeyConstraint(
            ["workflow_id"], ["workflows.id"], name=op.f("fk_workflow_versions_workflow_id_workflows")
        ),
        sa.PrimaryKeyConstraint("workflow_id", "version", name=op.f("pk_workflow_versions")),
    )


def downgrade() -> None:
    op.drop_table("workflow_versions")
    with op.batch_alter_table("workflows", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_workflows_tenant_id_updated_at"))

    op.drop_table("workflows")
    with op.batch_alter_table("instances", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_instances_workflow_id_status_created_at"))
        batch_op.drop_index(batch_op.f("ix_instances_tenant_id_created_at"))
        batch_op.drop_index(batch_op.f("ix_instances_status_deadline_at"))

    op.drop_table("instances")
    op.drop_table("tenants")
    with op.batch_alter_table("node_jobs", schema=None) as batch_op:
        batch_op.drop_index("uq_node_jobs_node")
        batch_op.drop_index("ix_node_jobs_lease_owner")
        batch_op.drop_index("ix_node_jobs_available")

    op.drop_table("node_jobs")
    op.drop_table("join_barriers")
    with op.batch_alter_table("instance_logs", schema=None) as batch_op:
        batch_op.drop_index("uq_instance_logs_node_event")
        batch_op.drop_index("ix_instance_logs_instance_log")
        batch_op.drop_index("ix_instance_logs_instance_event")

    op.drop_table("instance_logs")
