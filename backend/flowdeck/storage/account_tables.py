"""Account tables: users, browser sessions, API tokens and one-time login links.

Secrets are never stored: a session cookie, an API token and a login link are random strings
whose SHA-256 is the stored key (they carry 256 bits of entropy, so a fast hash is enough; user
passwords, which are guessable, are hashed with argon2id instead).
"""

from __future__ import annotations

import sqlalchemy as sa

from flowdeck.storage.tables import Epoch, Id, metadata

__all__ = ("api_tokens", "login_links", "rate_counters", "user_sessions", "users")

SecretHash = sa.String(64)  # hex SHA-256

users = sa.Table(
    "users",
    metadata,
    sa.Column("id", Id, primary_key=True),
    sa.Column("tenant_id", Id, sa.ForeignKey("tenants.id"), nullable=False),
    sa.Column("email", sa.String(320), nullable=False, unique=True),  # stored lower-cased
    sa.Column("password_hash", sa.String(255), nullable=True),  # argon2id; NULL: no password login
    sa.Column("created_at", Epoch, nullable=False),
    sa.Column("last_login_at", Epoch, nullable=True),
    sa.Column("disabled_at", Epoch, nullable=True),
    sa.Index(None, "tenant_id"),
)

user_sessions = sa.Table(
    "user_sessions",
    metadata,
    sa.Column("id", SecretHash, primary_key=True),  # SHA-256 of the cookie value
    sa.Column("user_id", Id, sa.ForeignKey("users.id"), nullable=False),
    sa.Column("csrf_token", sa.String(64), nullable=False),
    sa.Column("created_at", Epoch, nullable=False),
    sa.Column("last_seen_at", Epoch, nullable=False),
    sa.Column("expires_at", Epoch, nullable=False),
    sa.Index(None, "user_id"),
    sa.Index(None, "expires_at"),
)

api_tokens = sa.Table(
    "api_tokens",
    metadata,
    sa.Column("id", Id, primary_key=True),
    sa.Column("tenant_id", Id, sa.ForeignKey("tenants.id"), nullable=False),
    sa.Column("user_id", Id, sa.ForeignKey("users.id"), nullable=False),
    sa.Column("name", sa.String(100), nullable=False),
    sa.Column("token_hash", SecretHash, nullable=False, unique=True),
    sa.Column("prefix", sa.String(16), nullable=False),  # the first characters, shown in lists
    sa.Column("created_at", Epoch, nullable=False),
    sa.Column("last_used_at", Epoch, nullable=True),
    sa.Column("expires_at", Epoch, nullable=True),
    sa.Column("revoked_at", Epoch, nullable=True),
    sa.Index(None, "user_id", "created_at"),
)

login_links = sa.Table(
    "login_links",
    metadata,
    sa.Column("id", SecretHash, primary_key=True),  # SHA-256 of the link's token
    sa.Column("user_id", Id, sa.ForeignKey("users.id"), nullable=False),
    sa.Column("created_at", Epoch, nullable=False),
    sa.Column("expires_at", Epoch, nullable=False),
    sa.Column("used_at", Epoch, nullable=True),
)

# Rate limits (login attempts per email and per client address, sync-widget runs per embed token): one row
# per key, counting the attempts of its current window. In the database, so every API process counts the
# same attempts; one upsert counts an attempt and answers the count, atomically (rows are locked).
rate_counters = sa.Table(
    "rate_counters",
    metadata,
    sa.Column("key", sa.String(400), primary_key=True),
    sa.Column("count", sa.Integer, nullable=False),
    sa.Column("resets_at", Epoch, nullable=False),  # the window's end: the next attempt after it counts from 1
    sa.Index(None, "resets_at"),
)
