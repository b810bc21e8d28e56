"""Request marks: ``wait_tokens.resumed_by`` and ``approval_decisions.request_mark`` hold the mark of the API
request that resumed the node or decided (api/replay.py). A request whose COMMIT lost its connection runs
again, and finds its own mark on what its first run committed: it answers as the first run would have (202,
the approval as decided), where the same call by anyone else is a 409. Rows written before have none.

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
    op.add_column("approval_decisions", sa.Column("request_mark", sa.String(32), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("approval_decisions") as batch:
        batch.drop_column("request_mark")
    with op.batch_alter_table("wait_tokens") as batch:
        batch.drop_column("resumed_by")
