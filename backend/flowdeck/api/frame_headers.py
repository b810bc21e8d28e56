"""No other site may frame the app: every answer says ``X-Frame-Options: DENY`` and ``frame-ancestors 'self'``.

An answer that brings its own ``Content-Security-Policy`` keeps it and gets neither header: that is the
embed page (``/embed/{token}``), framable by the origins its widget lists (``widgets/frames.py``).
Browsers that know CSP follow ``frame-ancestors`` and ignore ``X-Frame-Options``; older ones refuse
all framing. A ``before_send`` hook, so that answers made outside the route handlers (a 401 from the
authentication middleware, a 404 for an unknown path) get the headers too.
"""

from __future__ import annotations

from typing import Final

from litestar.datastructures import MutableScopeHeaders
from litestar.types import Message, Scope

__all__ = ("APP_FRAME_POLICY", "add_frame_headers")

APP_FRAME_POLICY: Final = "frame-ancestors 'self'"


async def add_frame_headers(message: Message, scope: Scope) -> None:
    """Add the framing headers to the start of every HTTP answer without a policy of its own."""
    if message["type"] != "http.response.start":
        return
    headers = MutableScopeHeaders.from_message(message)
    if "content-security-policy" not in headers:
        headers["Content-Security-Policy"] = APP_FRAME_POLICY
        headers["X-Frame-Options"] = "DENY"
