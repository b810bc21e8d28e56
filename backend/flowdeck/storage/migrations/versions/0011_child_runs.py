"""Sub-workflows: a run knows the run and node that called it, and its nesting depth.

``instances.parent_instance_id`` / ``parent_node_id`` / ``parent_iteration`` / ``parent_attempt`` name the
``workflow`` node attempt that started the run (NULL for every other run); ``depth`` is 0 for a run
nobody called and its parent's + 1 otherwise.

Revision ID: 0011
Revises: 0010
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0011"
down_revision: str | None = "0010"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("instances", schema=None) as batch_op:
        batch_op.add_column(sa.Column("parent_instance_id", sa.String(length=36), nullable=True))
        batch_op.add_column(sa.Column("parent_node_id", sa.String(length=64), nullable=True))
        batch_op.add_column(sa.Column("parent_iteration", sa.String(length=200), nullable=True))
        batch_op.add_column(sa.Column("parent_attempt", sa.Integer(), nullable=True))
        batch_op.add_column(sa.Column("depth", sa.Integer(), server_default="0", nullable=False))
        batch_op.create_index(
            batch_op.f("ix_instances_parent_instance_id_parent_node_id"),
            ["parent_instance_id", "parent_node_id"],
            unique=False,
        )


def downgrade() -> None:
    with op.batch_alter_table("instances", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_instances_parent_instance_id_parent_node_id"))
        batch_op.drop_column("depth")
        batch_op.drop_column("parent_attempt")
        batch_op.drop_column("parent_iteration")
        batch_op.drop_column("parent_node_id")
        batch_op.drop_column("parent_instance_id")
