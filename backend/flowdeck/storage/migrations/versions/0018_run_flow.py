"""Flow control on a workflow (engine/flow_control.py): ``run_flow``, one row per production run of a workflow
with ``options.concurrency`` or ``options.debounce``: its group, its priority and why it waits, if it does.

Revision ID: 0018
Revises: 0017
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0018"
down_revision: str | None = "0017"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "run_flow",
        sa.Column("instance_id", sa.String(length=36), nullable=False),
        sa.Column("workflow_id", sa.String(length=36), nullable=False),
        sa.Column("group_key", sa.String(length=200), nullable=True),
        sa.Column("debounce_key", sa.String(length=200), nullable=True),
        sa.Column("concurrency_limit", sa.Integer(), nullable=True),
        sa.Column("strategy", sa.String(length=24), nullable=True),
        sa.Column("priority", sa.Integer(), server_default="50", nullable=False),
        sa.Column("waiting", sa.String(length=16), nullable=True),
        sa.Column("ready_at", sa.Double(), nullable=False),
        sa.PrimaryKeyConstraint("instance_id", name=op.f("pk_run_flow")),
    )
    op.create_index(op.f("ix_run_flow_workflow_id_group_key"), "run_flow", ["workflow_id", "group_key"])
    op.create_index(op.f("ix_run_flow_workflow_id_debounce_key"), "run_flow", ["workflow_id", "debounce_key"])
    op.create_index(
        "ix_run_flow_waiting",
        "run_flow",
        ["ready_at"],
        sqlite_where=sa.text("waiting IS NOT NULL"),
        postgresql_where=sa.text("waiting IS NOT NULL"),
    )


def downgrade() -> None:
    op.drop_table("run_flow")
