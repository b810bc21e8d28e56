"""Widgets and their embed tokens.

Revision ID: 0005
Revises: 0004
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0005"
down_revision: str | None = "0004"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

Json = sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql")


def upgrade() -> None:
    op.create_table(
        "widgets",
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("tenant_id", sa.String(length=36), nullable=False),
        sa.Column("workflow_id", sa.String(length=36), nullable=False),
        sa.Column("name", sa.String(length=200), nullable=False),
        sa.Column("type", sa.String(length=16), nullable=False),
        sa.Column("mode", sa.String(length=16), nullable=False),
        sa.Column("config", Json, nullable=False),
        sa.Column("frame_ancestors", Json, nullable=True),
        sa.Column("created_at", sa.Double(), nullable=False),
        sa.Column("updated_at", sa.Double(), nullable=False),
        sa.ForeignKeyConstraint(["tenant_id"], ["tenants.id"], name=op.f("fk_widgets_tenant_id_tenants")),
        sa.ForeignKeyConstraint(["workflow_id"], ["workflows.id"], name=op.f("fk_widgets_workflow_id_workflows")),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_widgets")),
    )
    with op.batch_alter_table("widgets", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_widgets_tenant_id_updated_at"), ["tenant_id", "updated_at"], unique=False)
        batch_op.create_index(batch_op.f("ix_widgets_workflow_id"), ["workflow_id"], unique=False)

    op.create_table(
        "embed_tokens",
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("tenant_id", sa.String(length=36), nullable=False),
        sa.Column("widget_id", sa.String(length=36), nullable=False),
        sa.Column("token_hash", sa.String(length=64), nullable=False),
        sa.Column("prefix", sa.String(length=16), nullable=False),
        sa.Column("created_at", sa.Double(), nullable=False),
        sa.Column("expires_at", sa.Double(), nullable=False),
        sa.Column("revoked_at", sa.Double(), nullable=True),
        sa.Column("last_used_at", sa.Double(), nullable=True),
        sa.ForeignKeyConstraint(["tenant_id"], ["tenants.id"], name=op.f("fk_embed_tokens_tenant_id_tenants")),
        sa.ForeignKeyConstraint(["widget_id"], ["widgets.id"], name=op.f("fk_embed_tokens_widget_id_widgets")),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_embed_tokens")),
        sa.UniqueConstraint("token_hash", name=op.f("uq_embed_tokens_token_hash")),
    )
    with op.batch_alter_table("embed_tokens", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_embed_tokens_widget_id_created_at"), ["widget_id", "created_at"], unique=False
        )


def downgrade() -> None:
    with op.batch_alter_table("embed_tokens", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_embed_tokens_widget_id_created_at"))

    op.drop_table("embed_tokens")
    with op.batch_alter_table("widgets", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_widgets_workflow_id"))
        batch_op.drop_index(batch_op.f("ix_widgets_tenant_id_updated_at"))

    op.drop_table("widgets")
