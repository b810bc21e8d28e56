"""``node_jobs.priority``: the run's priority on each of its node jobs, so a tenant's due jobs are claimed
in aged-priority order (domain/flow_control.py ``aged_at``; storage/statements.py), not only its queued
runs started in that order. Jobs queued before this migration keep the default, 50.

No index: a claim still finds due jobs through ``ix_node_jobs_tenant_available``; when one tenant's due
jobs are all of one priority (the common case) it walks that index in order and stops at its limit, and
only mixed priorities sort the tenant's due jobs (docs/engine.md "Priority").

Revision ID: 0021
Revises: 0020
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0021"
down_revision: str | None = "0020"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column("node_jobs", sa.Column("priority", sa.Integer(), server_default="50", nullable=False))


def downgrade() -> None:
    with op.batch_alter_table("node_jobs") as batch:
        batch.drop_column("priority")
