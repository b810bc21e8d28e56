"""Data sources and saved queries.

Revision ID: 0003
Revises: 0002
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0003"
down_revision: str | None = "0002"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

Json = sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql")


def upgrade() -> None:
    op.create_table(
        "data_sources",
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("tenant_id", sa.String(length=36), nullable=False),
        sa.Column("name", sa.String(length=200), nullable=False),
        sa.Column("kind", sa.String(length=16), nullable=False),
        sa.Column("config", Json, nullable=False),
        sa.Column("secret_names", Json, nullable=False),
        sa.Column("secrets", sa.Text(), nullable=True),
        sa.Column("created_at", sa.Double(), nullable=False),
        sa.Column("updated_at", sa.Double(), nullable=False),
        sa.ForeignKeyConstraint(["tenant_id"], ["tenants.id"], name=op.f("fk_data_sources_tenant_id_tenants")),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_data_sources")),
    )
    with op.batch_alter_table("data_sources", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_data_sources_tenant_id_name"), ["tenant_id", "name"], unique=True)

    op.create_table(
        "saved_queries",
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("tenant_id", sa.String(length=36), nullable=False),
        sa.Column("data_source_id", sa.String(length=36), nullable=False),
        sa.Column("name", sa.String(length=200), nullable=False),
        sa.Column("kind", sa.String(length=16), nullable=False),
        sa.Column("parameters", Json, nullable=False),
        sa.Column("definition", Json, nullable=False),
        sa.Column("created_at", sa.Double(), nullable=False),
        sa.Column("updated_at", sa.Double(), nullable=False),
        sa.ForeignKeyConstraint(
            ["data_source_id"], ["data_sources.id"], name=op.f("fk_saved_queries_data_source_id_data_sources")
        ),
        sa.ForeignKeyConstraint(["tenant_id"], ["tenants.id"], name=op.f("fk_saved_queries_tenant_id_tenants")),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_saved_queries")),
    )
    with op.batch_alter_table("saved_queries", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_saved_queries_data_source_id"), ["data_source_id"], unique=False)
        batch_op.create_index(batch_op.f("ix_saved_queries_tenant_id_name"), ["tenant_id", "name"], unique=True)


def downgrade() -> None:
    with op.batch_alter_table("saved_queries", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_saved_queries_tenant_id_name"))
        batch_op.drop_index(batch_op.f("ix_saved_queries_data_source_id"))

    op.drop_table("saved_queries")
    with op.batch_alter_table("data_sources", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_data_sources_tenant_id_name"))

    op.drop_table("data_sources")
