"""Run budgets: the run-tree counter of sub-workflow calls, and an index to count a tenant's active runs.

``instances.root_instance_id`` names a called run's outermost caller (NULL for a run nothing called);
``instances.tree_runs`` is, on such a root, how many runs its tree holds (itself included). Runs called
before this revision get their root here, and each root the count of its tree. The index on
``(tenant_id, status)`` serves the count of a tenant's PENDING and RUNNING runs at each start.

Revision ID: 0013
Revises: 0012
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0013"
down_revision: str | None = "0012"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_MAX_DEPTH = 10  # storage/children.py MAX_DEPTH when this revision was written


def upgrade() -> None:
    with op.batch_alter_table("instances", schema=None) as batch_op:
        batch_op.add_column(sa.Column("root_instance_id", sa.String(length=36), nullable=True))
        batch_op.add_column(sa.Column("tree_runs", sa.Integer(), server_default="1", nullable=False))
        batch_op.create_index(batch_op.f("ix_instances_tenant_id_status"), ["tenant_id", "status"], unique=False)
    for depth in range(1, _MAX_DEPTH + 1):  # parents first: each level reads the root its parent just got
        op.execute(
            "UPDATE instances SET root_instance_id = (SELECT COALESCE(p.root_instance_id, p.id) FROM instances p"
            f" WHERE p.id = instances.parent_instance_id) WHERE depth = {depth} AND parent_instance_id IS NOT NULL"
        )
    op.execute(
        "UPDATE instances SET tree_runs = 1 + trees.runs FROM (SELECT root_instance_id AS root, COUNT(*) AS runs"
        " FROM instances WHERE root_instance_id IS NOT NULL GROUP BY root_instance_id) AS trees"
        " WHERE instances.id = trees.root"
    )


def downgrade() -> None:
    with op.batch_alter_table("instances", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_instances_tenant_id_status"))
        batch_op.drop_column("tree_runs")
        batch_op.drop_column("root_instance_id")
