"""Data sources and saved queries (SPEC §6), per tenant.

``data_sources.secrets`` holds one Fernet token of the JSON object of secret values (encrypted with a
key derived from ``FLOWDECK_SECRET_KEY``); ``secret_names`` lists their names in clear, so a listing
can say which secrets are set without the key. Names are unique per tenant.
"""

from __future__ import annotations

import sqlalchemy as sa

from flowdeck.storage.tables import Epoch, Id, Json, metadata

__all__ = ("data_sources", "saved_queries")

data_sources = sa.Table(
    "data_sources",
    metadata,
    sa.Column("id", Id, primary_key=True),
    sa.Column("tenant_id", Id, sa.ForeignKey("tenants.id"), nullable=False),
    sa.Column("name", sa.String(200), nullable=False),
    sa.Column("kind", sa.String(16), nullable=False),  # sql | http
    sa.Column("config", Json, nullable=False),
    sa.Column("secret_names", Json, nullable=False),
    sa.Column("secrets", sa.Text, nullable=True),
    sa.Column("created_at", Epoch, nullable=False),
    sa.Column("updated_at", Epoch, nullable=False),
    sa.Index(None, "tenant_id", "name", unique=True),
)

saved_queries = sa.Table(
    "saved_queries",
    metadata,
    sa.Column("id", Id, primary_key=True),
    sa.Column("tenant_id", Id, sa.ForeignKey("tenants.id"), nullable=False),
    sa.Column("data_source_id", Id, sa.ForeignKey("data_sources.id"), nullable=False),
    sa.Column("name", sa.String(200), nullable=False),
    sa.Column("kind", sa.String(16), nullable=False),
    sa.Column("parameters", Json, nullable=False),  # declared parameter names, in order
    sa.Column("definition", Json, nullable=False),  # {sql} | {method, path, query, body, headers}
    sa.Column("created_at", Epoch, nullable=False),
    sa.Column("updated_at", Epoch, nullable=False),
    sa.Index(None, "tenant_id", "name", unique=True),
    sa.Index(None, "data_source_id"),
)
