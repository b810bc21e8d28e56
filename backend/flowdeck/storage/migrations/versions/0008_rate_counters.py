"""Rate limits as one counter row per key, counted by one atomic upsert (logins, sync-widget runs).

Replaces ``login_failures`` (one row per failure, checked before the failure was written, so parallel
attempts all got through): its rows only ever described the last 15 minutes, so nothing lasting is lost.

Revision ID: 0008
Revises: 0007
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0008"
down_revision: str | None = "0007"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "rate_counters",
        sa.Column("key", sa.String(length=400), nullable=False),
        sa.Column("count", sa.Integer(), nullable=False),
        sa.Column("resets_at", sa.Double(), nullable=False),
        sa.PrimaryKeyConstraint("key", name=op.f("pk_rate_counters")),
    )
    with op.batch_alter_table("rate_counters", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_rate_counters_resets_at"), ["resets_at"], unique=False)
    with op.batch_alter_table("login_failures", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_login_failures_key_at"))
        batch_op.drop_index(batch_op.f("ix_login_failures_at"))
    op.drop_table("login_failures")


def downgrade() -> None:
    op.create_table(
        "login_failures",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), autoincrement=True, nullable=False),
        sa.Column("key", sa.String(length=400), nullable=False),
        sa.Column("at", sa.Double(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_login_failures")),
    )
    with op.batch_alter_table("login_failures", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_login_failures_at"), ["at"], unique=False)
        batch_op.create_index(batch_op.f("ix_login_failures_key_at"), ["key", "at"], unique=False)
    with op.batch_alter_table("rate_counters", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_rate_counters_resets_at"))
    op.drop_table("rate_counters")
