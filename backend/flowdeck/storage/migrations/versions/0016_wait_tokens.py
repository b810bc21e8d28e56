"""The tokens of ``wait`` nodes: one per node and iteration of a run, stored as a sha256 hash.

``resumed_at`` / ``timed_out_at`` are set by one conditional UPDATE each (``WHERE both are NULL``), so a
resume and a timeout of the same token race safely: exactly one wins, whichever process runs it.

Revision ID: 0016
Revises: 0015
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects.postgresql import JSONB

revision: str = "0016"
down_revision: str | None = "0015"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "wait_tokens",
        sa.Column("token_hash", sa.String(length=64), nullable=False),
        sa.Column("instance_id", sa.String(length=36), nullable=False),
        sa.Column("node_id", sa.String(length=64), nullable=False),
        sa.Column("iteration", sa.String(length=200), nullable=False),
        sa.Column("resume_on", sa.String(length=16), nullable=False),
        sa.Column("created_at", sa.Double(), nullable=False),
        sa.Column("until", sa.Double(), nullable=True),
        sa.Column("resumed_at", sa.Double(), nullable=True),
        sa.Column("timed_out_at", sa.Double(), nullable=True),
        sa.Column("output", sa.JSON().with_variant(JSONB(), "postgresql"), nullable=True),
        sa.PrimaryKeyConstraint("token_hash", name=op.f("pk_wait_tokens")),
        sa.UniqueConstraint(
            "instance_id", "node_id", "iteration", name=op.f("uq_wait_tokens_instance_id_node_id_iteration")
        ),
    )


def downgrade() -> None:
    op.drop_table("wait_tokens")
