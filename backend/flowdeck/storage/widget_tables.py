"""Widget tables: widgets (a view of a workflow's run output) and the embed tokens that open one widget.

An embed token is stored as the SHA-256 of its secret, like an API token. A widget belongs to its
workflow's tenant; deleting the widget or its workflow deletes the widget's tokens (``storage/widgets.py``).
"""

from __future__ import annotations

import sqlalchemy as sa

from flowdeck.storage.account_tables import SecretHash
from flowdeck.storage.tables import Epoch, Id, Json, metadata

__all__ = ("embed_tokens", "widgets")

widgets = sa.Table(
    "widgets",
    metadata,
    sa.Column("id", Id, primary_key=True),
    sa.Column("tenant_id", Id, sa.ForeignKey("tenants.id"), nullable=False),
    sa.Column("workflow_id", Id, sa.ForeignKey("workflows.id"), nullable=False),
    sa.Column("name", sa.String(200), nullable=False),
    sa.Column("type", sa.String(16), nullable=False),  # table | chart | metric | text | json
    sa.Column("mode", sa.String(16), nullable=False),  # replay | sync
    sa.Column("config", Json, nullable=False),
    sa.Column("frame_ancestors", Json, nullable=True),  # NULL: any site may frame the embed page
    sa.Column("created_at", Epoch, nullable=False),
    sa.Column("updated_at", Epoch, nullable=False),
    sa.Index(None, "tenant_id", "updated_at"),
    sa.Index(None, "workflow_id"),
)

embed_tokens = sa.Table(
    "embed_tokens",
    metadata,
    sa.Column("id", Id, primary_key=True),
    sa.Column("tenant_id", Id, sa.ForeignKey("tenants.id"), nullable=False),
    sa.Column("widget_id", Id, sa.ForeignKey("widgets.id"), nullable=False),
    sa.Column("token_hash", SecretHash, nullable=False, unique=True),
    sa.Column("prefix", sa.String(16), nullable=False),
    sa.Column("created_at", Epoch, nullable=False),
    sa.Column("expires_at", Epoch, nullable=False),
    sa.Column("revoked_at", Epoch, nullable=True),
    sa.Column("last_used_at", Epoch, nullable=True),
    sa.Index(None, "widget_id", "created_at"),
)
