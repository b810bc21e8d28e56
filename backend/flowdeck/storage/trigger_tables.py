"""Trigger tables: the webhook secret of a workflow (SPEC §8).

The secret is stored as its SHA-256, like an API token: it carries 256 random bits, so a fast hash is
safe, and the plain secret is shown once, when it is made. Schedules need no table: they live in the
workflow's definition, and a fired due time is the run it started (``triggers/schedules.py``).
"""

from __future__ import annotations

import sqlalchemy as sa

from flowdeck.storage.account_tables import SecretHash
from flowdeck.storage.tables import Epoch, Id, metadata

__all__ = ("workflow_webhooks",)

workflow_webhooks = sa.Table(
    "workflow_webhooks",
    metadata,
    sa.Column("workflow_id", Id, sa.ForeignKey("workflows.id"), primary_key=True),
    sa.Column("tenant_id", Id, sa.ForeignKey("tenants.id"), nullable=False),
    sa.Column("secret_hash", SecretHash, nullable=False),
    sa.Column("created_at", Epoch, nullable=False),  # when the current secret was made
    sa.Column("last_used_at", Epoch, nullable=True),  # written at most once a minute
)
