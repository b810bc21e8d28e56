"""A workflow version's note: who saved it (``author``, the user's email) and an optional ``message``.

Both are nullable: versions saved before this revision have neither, and the editor shows them without.

Revision ID: 0019
Revises: 0018
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0019"
down_revision: str | None = "0018"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("workflow_versions") as batch:
        batch.add_column(sa.Column("author", sa.String(length=320), nullable=True))
        batch.add_column(sa.Column("message", sa.String(length=500), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("workflow_versions") as batch:
        batch.drop_column("message")
        batch.drop_column("author")
