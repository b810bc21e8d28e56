"""Retention (issue 22): the tenants' own retention policies, and SQLite files that give space back.

``tenant_retention`` holds a tenant's policy (no row: the server's defaults). On SQLite the database
switches to ``auto_vacuum = INCREMENTAL``, so the pruner's ``PRAGMA incremental_vacuum`` returns the
pages of deleted runs to the file system. An existing database takes the setting only through a
``VACUUM``, which rewrites the file once: it needs free disk about the size of the database and holds
the write lock while it runs (docs/operations.md "Retention and pruning").

Revision ID: 0014
Revises: 0013
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0014"
down_revision: str | None = "0013"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "tenant_retention",
        sa.Column("tenant_id", sa.String(length=36), nullable=False),
        sa.Column("max_age_days", sa.Integer(), nullable=False),
        sa.Column("test_max_age_days", sa.Integer(), nullable=False),
        sa.Column("max_runs", sa.Integer(), nullable=False),
        sa.Column("updated_at", sa.Double(), nullable=False),
        sa.ForeignKeyConstraint(["tenant_id"], ["tenants.id"], name=op.f("fk_tenant_retention_tenant_id_tenants")),
        sa.PrimaryKeyConstraint("tenant_id", name=op.f("pk_tenant_retention")),
    )
    if op.get_bind().dialect.name == "sqlite":
        with op.get_context().autocommit_block():  # VACUUM cannot run inside a transaction
            op.execute("PRAGMA auto_vacuum = INCREMENTAL")
            op.execute("VACUUM")


def downgrade() -> None:
    op.drop_table("tenant_retention")
