"""A tenant's own retention policy (issue 22); a tenant without a row keeps the server's defaults."""

from __future__ import annotations

import sqlalchemy as sa

from flowdeck.storage.tables import Epoch, Id, metadata

__all__ = ("tenant_retention",)

tenant_retention = sa.Table(
    "tenant_retention",
    metadata,
    sa.Column("tenant_id", Id, sa.ForeignKey("tenants.id"), primary_key=True),
    sa.Column("max_age_days", sa.Integer, nullable=False),
    sa.Column("test_max_age_days", sa.Integer, nullable=False),
    sa.Column("max_runs", sa.Integer, nullable=False),
    sa.Column("updated_at", Epoch, nullable=False),
)
