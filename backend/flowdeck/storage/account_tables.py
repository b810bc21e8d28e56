"""Account tables: users, browser sessions, API tokens and one-time login links.

Secrets are never stored: a session cookie, an API token and a login link are random strings
whose SHA-256 is the stored key (they carry 256 bits of entropy, so a fast hash is enough; user
passwords, which are guessable, are hashed with argon2id instead).
"""

from __future__ import annotations

import sqlalchemy as sa

from flowdeck.storage.tables import Epoch, Id, metadata

__all__ = ("api_tokens", "login_failures", "login_links", "user_sessions", "users")

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

# Failed logins, per key ("e:<email>" or "a:<client address>"), kept for the rate limit's window: in the
# database, so every API process counts the same failures.
login_failures = sa.Table(
    "login_failures",
    metadata,
    sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), primary_key=True, autoincrement=True),
    sa.Column("key", sa.String(400), nullable=False),
    sa.Column("at", Epoch, nullable=False),
    sa.Index(None, "key", "at"),
    sa.Index(None, "at"),
)
