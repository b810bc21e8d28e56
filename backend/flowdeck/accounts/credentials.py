"""Random secrets (session cookies, API tokens, login links) and how they are stored: as SHA-256 hashes.

These secrets carry 256 bits of entropy, so a fast hash is safe and lets a request find its row by an
indexed lookup; guessable user passwords use argon2id instead (``passwords.py``).
"""

from __future__ import annotations

import hashlib
import hmac
import secrets

__all__ = (
    "EMBED_TOKEN_PREFIX",
    "SESSION_COOKIE",
    "TOKEN_PREFIX",
    "hash_secret",
    "is_api_token",
    "is_embed_token",
    "new_api_token",
    "new_embed_token",
    "new_secret",
    "same_secret",
)

SESSION_COOKIE = "flowdeck_session"
"""The browser session cookie (its value is the secret; ``user_sessions`` stores its hash)."""

TOKEN_PREFIX = "fdk_"  # noqa: S105 -- a marker, not a secret
"""Every API token starts with this, so a leaked token is easy to recognise (and to scan for)."""

EMBED_TOKEN_PREFIX = "fde_"  # noqa: S105 -- a marker, not a secret
"""Every embed token (read-only, one widget: ``/embed/<token>``) starts with this."""

_DISPLAY_CHARS = 12


def new_secret() -> str:
    return secrets.token_urlsafe(32)


def new_api_token() -> tuple[str, str]:
    """A new API token and the prefix shown for it in lists."""
    token = TOKEN_PREFIX + secrets.token_urlsafe(32)
    return token, token[:_DISPLAY_CHARS]


def is_api_token(value: str) -> bool:
    return value.startswith(TOKEN_PREFIX) and 16 < len(value) <= 128


def new_embed_token() -> tuple[str, str]:
    """A new embed token and the prefix shown for it in lists."""
    token = EMBED_TOKEN_PREFIX + secrets.token_urlsafe(32)
    return token, token[:_DISPLAY_CHARS]


def is_embed_token(value: str) -> bool:
    return value.startswith(EMBED_TOKEN_PREFIX) and 16 < len(value) <= 128


def hash_secret(value: str) -> str:
    return hashlib.sha256(value.encode("utf-8", "surrogatepass")).hexdigest()


def same_secret(a: str, b: str) -> bool:
    return hmac.compare_digest(a.encode("utf-8", "surrogatepass"), b.encode("utf-8", "surrogatepass"))
