"""Notification tables (SPEC §2 ``options.onFailure`` / ``options.onSlaBreach``).

``run_notices`` is an outbox: a row is written in the same transaction as the event it announces (the
run's failure, its SLA breach), so a notice survives a restart and exists once per event whatever the
number of processes. ``available_at`` is when it is due and, once claimed, when its lease ends (like
``node_jobs``): a process that died while sending leaves it due again. ``payload`` is fixed at the
first attempt, so every retry sends the same body (and signature).

``notification_secrets`` holds each workflow's signing key, encrypted with ``FLOWDECK_SECRET_KEY``
(the raw key is needed to sign, so it cannot be hashed); ``shown_at`` is set once it was displayed.
"""

from __future__ import annotations

import sqlalchemy as sa

from flowdeck.storage.tables import BigId, Epoch, Id, Json, metadata

__all__ = ("notification_secrets", "run_notices")

run_notices = sa.Table(
    "run_notices",
    metadata,
    sa.Column("id", BigId, primary_key=True, autoincrement=True),
    sa.Column("tenant_id", Id, nullable=False),
    sa.Column("instance_id", Id, nullable=False),
    sa.Column("workflow_id", Id, nullable=True),
    sa.Column("event", sa.String(16), nullable=False),  # failure | sla_breach
    sa.Column("payload", Json, nullable=True),
    sa.Column("attempts", sa.Integer, nullable=False, server_default="0"),
    sa.Column("available_at", Epoch, nullable=False),
    sa.Column("created_at", Epoch, nullable=False),
    sa.Column("last_error", sa.Text, nullable=True),
    sa.Index(None, "available_at"),
)

notification_secrets = sa.Table(
    "notification_secrets",
    metadata,
    sa.Column("workflow_id", Id, sa.ForeignKey("workflows.id"), primary_key=True),
    sa.Column("tenant_id", Id, sa.ForeignKey("tenants.id"), nullable=False),
    sa.Column("secret_enc", sa.Text, nullable=False),
    sa.Column("created_at", Epoch, nullable=False),
    sa.Column("shown_at", Epoch, nullable=True),
)
