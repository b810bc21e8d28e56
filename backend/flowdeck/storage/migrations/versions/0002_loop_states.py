"""loop states

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-21 06:34:12.017108
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0002"
down_revision: str | None = "0001"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "loop_states",
        sa.Column("instance_id", sa.String(length=36), nullable=False),
        sa.Column("node_id", sa.String(length=64), nullable=False),
        sa.Column("iteration", sa.String(length=200), nullable=False),
        sa.Column("item_count", sa.Integer(), nullable=False),
        sa.Column("finished", sa.Integer(), nullable=False),
        sa.Column("attempt", sa.Integer(), nullable=False),
        sa.PrimaryKeyConstraint("instance_id", "node_id", "iteration", name=op.f("pk_loop_states")),
    )


def downgrade() -> None:
    op.drop_table("loop_states")
