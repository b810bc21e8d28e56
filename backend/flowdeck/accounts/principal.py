"""Who is calling: the authenticated user of a request or a Socket.IO connection."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

__all__ = ("AuthMethod", "Principal")

AuthMethod = Literal["session", "token"]


@dataclass(frozen=True, slots=True)
class Principal:
    user_id: str
    tenant_id: str
    tenant_name: str
    email: str
    method: AuthMethod
    session_id: str | None = None
    """The stored key (hash) of the browser session, when the caller came with the session cookie."""
    csrf_token: str | None = None
    """The session's CSRF token: a cookie-authenticated unsafe request must echo it in a header."""
    token_id: str | None = None
    """The API token's id, when the caller came with ``Authorization: Bearer``."""
