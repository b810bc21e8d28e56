"""Run labels, and the indexes that keep the run history fast at millions of runs.

``run_labels`` holds up to FLOWDECK_MAX_RUN_LABELS ``name -> value`` strings per run, with the run's
tenant and creation time copied so ``?label.name=value`` walks one index newest first. The run list's
filters each get an index that starts with the tenant and ends in the list's order (created_at, id), so a
page is read in order and never sorted; the editor's combinations (workflow and status, workflow and
production/test) have theirs. ``(tenant_id, created_at)`` becomes ``(tenant_id, created_at, id)``, and
``(workflow_id, status, created_at)`` goes: ``(tenant_id, workflow_id, status, created_at, id)`` answers
its one reader (a widget's latest runs, which filters by tenant too). A caller's runs have a partial index
(only runs something called: nothing for the others).

Revision ID: 0015
Revises: 0014
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0015"
down_revision: str | None = "0014"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_LIST_INDEXES = (
    ("ix_instances_tenant_id_created_at_id", ["tenant_id", "created_at", "id"]),
    ("ix_instances_tenant_id_status_created_at_id", ["tenant_id", "status", "created_at", "id"]),
    ("ix_instances_tenant_id_workflow_id_created_at_id", ["tenant_id", "workflow_id", "created_at", "id"]),
    (
        "ix_instances_tenant_id_workflow_id_status_created_at_id",
        ["tenant_id", "workflow_id", "status", "created_at", "id"],
    ),
    (
        "ix_instances_tenant_id_workflow_id_is_test_created_at_id",
        ["tenant_id", "workflow_id", "is_test", "created_at", "id"],
    ),
    ("ix_instances_tenant_id_is_test_created_at_id", ["tenant_id", "is_test", "created_at", "id"]),
    ("ix_instances_tenant_id_trigger_created_at_id", ["tenant_id", "trigger", "created_at", "id"]),
)
_CALLER_INDEX = "ix_instances_parent_instance_id_created_at_id"
_CALLED = sa.text("parent_instance_id IS NOT NULL")


def upgrade() -> None:
    op.create_table(
        "run_labels",
        sa.Column("instance_id", sa.String(length=36), nullable=False),
        sa.Column("name", sa.String(length=64), nullable=False),
        sa.Column("tenant_id", sa.String(length=36), nullable=False),
        sa.Column("value", sa.Text(), nullable=False),
        sa.Column("created_at", sa.Double(), nullable=False),
        sa.PrimaryKeyConstraint("instance_id", "name", name=op.f("pk_run_labels")),
    )
    with op.batch_alter_table("run_labels", schema=None) as batch_op:
        batch_op.create_index(
            "ix_run_labels_tenant_name_value_created", ["tenant_id", "name", "value", "created_at", "instance_id"]
        )
    with op.batch_alter_table("instances", schema=None) as batch_op:
        batch_op.drop_index("ix_instances_tenant_id_created_at")
        batch_op.drop_index("ix_instances_workflow_id_status_created_at")
        # 0013's count of a tenant's active runs reads the (tenant_id, status, created_at, id) index now.
        batch_op.drop_index("ix_instances_tenant_id_status")
        for name, columns in _LIST_INDEXES:
            batch_op.create_index(name, columns, unique=False)
        batch_op.create_index(
            _CALLER_INDEX,
            ["parent_instance_id", "created_at", "id"],
            unique=False,
            sqlite_where=_CALLED,
            postgresql_where=_CALLED,
        )


def downgrade() -> None:
    with op.batch_alter_table("instances", schema=None) as batch_op:
        batch_op.drop_index(_CALLER_INDEX)
        for name, _ in reversed(_LIST_INDEXES):
            batch_op.drop_index(name)
        batch_op.create_index("ix_instances_tenant_id_created_at", ["tenant_id", "created_at"], unique=False)
        batch_op.create_index(
            "ix_instances_workflow_id_status_created_at", ["workflow_id", "status", "created_at"], unique=False
        )
        batch_op.create_index("ix_instances_tenant_id_status", ["tenant_id", "status"], unique=False)
    with op.batch_alter_table("run_labels", schema=None) as batch_op:
        batch_op.drop_index("ix_run_labels_tenant_name_value_created")
    op.drop_table("run_labels")
