"""A run's stored-output counter: ``instances.output_bytes``, charged against FLOWDECK_MAX_RUN_BYTES.

Runs that exist already start at 0 (what they stored before is not counted).

Revision ID: 0012
Revises: 0011
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0012"
down_revision: str | None = "0011"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("instances", schema=None) as batch_op:
        batch_op.add_column(sa.Column("output_bytes", sa.BigInteger(), server_default="0", nullable=False))


def downgrade() -> None:
    with op.batch_alter_table("instances", schema=None) as batch_op:
        batch_op.drop_column("output_bytes")
