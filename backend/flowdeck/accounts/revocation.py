"""Credentials that live connections hold, by a key each, and how their revocation is announced.

A Socket.IO connection is opened with one credential (a browser session, an API token or an embed
token) and keeps it for its life; revoking the credential must close the connection in every process.
The service that revokes announces the credential's key (``session_key`` ...) to a ``RevocationSink``:
the engine's publisher, which fans it out like the live updates (``engine/publisher.py``, across
processes through ``engine/fanout.py``); the realtime server disconnects the connections it
holds under that key.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from flowdeck.accounts.principal import Principal

__all__ = (
    "RevocationSink",
    "api_token_key",
    "embed_token_key",
    "ignore_revocations",
    "principal_keys",
    "session_key",
    "split_key",
    "widget_key",
    "workflow_key",
)

RevocationSink = Callable[[Sequence[str]], None]
"""Told the keys of credentials that were just revoked (after the revocation was committed)."""


def ignore_revocations(_: Sequence[str]) -> None:
    """The sink of a process without live connections (the CLI)."""


def session_key(session_id: str) -> str:
    return f"session:{session_id}"


def api_token_key(token_id: str) -> str:
    return f"token:{token_id}"


def embed_token_key(token_id: str) -> str:
    return f"embed:{token_id}"


def widget_key(widget_id: str) -> str:
    """Every embed connection of a widget: it is deleted."""
    return f"widget:{widget_id}"


def workflow_key(workflow_id: str) -> str:
    """Every embed connection of a workflow's widgets: the workflow is deleted (its widgets with it)."""
    return f"workflow:{workflow_id}"


def split_key(key: str) -> tuple[str, str]:
    """``("token", "<id>")`` of ``"token:<id>"``."""
    kind, _, ident = key.partition(":")
    return kind, ident


def principal_keys(principal: Principal) -> tuple[str, ...]:
    """The keys under which a signed-in connection is revoked."""
    if principal.session_id is not None:
        return (session_key(principal.session_id),)
    if principal.token_id is not None:
        return (api_token_key(principal.token_id),)
    return ()
