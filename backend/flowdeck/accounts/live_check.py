"""Which credentials held by live connections are still good: not revoked, not expired, their user enabled.

The realtime server asks this every ``live_check_seconds`` about the credentials its connections hold
(three indexed reads, whatever their number), and closes the connections of those that are not: so a
credential that *expires* while connected stops too, and a revocation made through another process
without Redis arrives within that period at the latest.
"""

from __future__ import annotations

from collections.abc import Collection

import sqlalchemy as sa

from flowdeck.accounts.revocation import api_token_key, embed_token_key, session_key, split_key
from flowdeck.storage.account_tables import api_tokens, user_sessions, users
from flowdeck.storage.database import Database
from flowdeck.storage.widget_tables import embed_tokens

__all__ = ("live_credentials",)

_CHECKED = ("session", "token", "embed")


async def live_credentials(db: Database, keys: Collection[str], now: float) -> set[str]:
    """The keys of ``keys`` that are still good; keys of other kinds (``widget:``...) are kept as they are."""
    ids: dict[str, list[str]] = {kind: [] for kind in _CHECKED}
    kept = set()
    for key in keys:
        kind, ident = split_key(key)
        if kind in ids:
            ids[kind].append(ident)
        else:
            kept.add(key)
    sessions = (
        sa.select(user_sessions.c.id)
        .join(users, users.c.id == user_sessions.c.user_id)
        .where(user_sessions.c.id.in_(ids["session"]), user_sessions.c.expires_at > now, users.c.disabled_at.is_(None))
    )
    tokens = (
        sa.select(api_tokens.c.id)
        .join(users, users.c.id == api_tokens.c.user_id)
        .where(api_tokens.c.id.in_(ids["token"]), api_tokens.c.revoked_at.is_(None), users.c.disabled_at.is_(None))
        .where(sa.or_(api_tokens.c.expires_at.is_(None), api_tokens.c.expires_at > now))
    )
    embeds = sa.select(embed_tokens.c.id).where(
        embed_tokens.c.id.in_(ids["embed"]), embed_tokens.c.revoked_at.is_(None), embed_tokens.c.expires_at > now
    )
    async with db.read() as conn:
        if ids["session"]:
            kept.update(session_key(i) for i in (await conn.execute(sessions)).scalars())
        if ids["token"]:
            kept.update(api_token_key(i) for i in (await conn.execute(tokens)).scalars())
        if ids["embed"]:
            kept.update(embed_token_key(i) for i in (await conn.execute(embeds)).scalars())
    return kept
