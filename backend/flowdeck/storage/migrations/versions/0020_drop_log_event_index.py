"""Drop ``ix_instance_logs_instance_event``: about 1 KB of every run (16 % of what a run stores) for reads
the run's log-order index answers as well.

Its readers each want a run's first or last row of a kind (its first RUN_STATUS, its last NODE_FAILED, a
test run's definition) or its top-level outputs once, when it ends: ``ix_instance_logs_instance_log``
walks the run's rows in log order and stops at the first match; the idempotency index serves every read
that names the node. Measured in docs/benchmarks.md "Bytes per run".

Revision ID: 0020
Revises: 0019
"""

from __future__ import annotations

from collections.abc import Sequence

from alembic import op

revision: str = "0020"
down_revision: str | None = "0019"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.drop_index("ix_instance_logs_instance_event", table_name="instance_logs")


def downgrade() -> None:
    op.create_index("ix_instance_logs_instance_event", "instance_logs", ["instance_id", "event_type"], unique=False)
