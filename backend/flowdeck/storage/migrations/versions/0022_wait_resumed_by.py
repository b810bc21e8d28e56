"""``wait_tokens.resumed_by``: the mark of the request that resumed the node (api/replay.py). A resume whose
COMMIT lost its connection runs again, and finds the token resumed by its own mark: it answers 202 as the
first run would have, where a resume by anyone else is a 409. Tokens resumed before this migration have none.

Revision ID: 0022
Revises: 0021
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0022"
down_revision: str | None = "0021"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column("wait_tokens", sa.Column("resumed_by", sa.String(32), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("wait_tokens") as batch:
        batch.drop_column("resumed_by")
