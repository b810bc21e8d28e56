"""Who may frame an embed page: ``frameAncestors`` checked, and the Content-Security-Policy it becomes."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any, Final

from flowdeck.widgets.errors import ConfigError

__all__ = ("MAX_FRAME_ANCESTORS", "check_frame_ancestors", "embed_csp")

MAX_FRAME_ANCESTORS: Final = 20
_ORIGIN: Final = re.compile(r"^https?://(\*\.)?[A-Za-z0-9-]+(\.[A-Za-z0-9-]+)*(:\d{1,5})?$")
_SELF: Final = "'self'"
# The embed page loads its own script, style and data only; images may come from https (Markdown).
_POLICY: Final = (
    "default-src 'self'; img-src 'self' data: https:; style-src 'self' 'unsafe-inline'; "
    "object-src 'none'; base-uri 'none'; form-action 'none'"
)


def check_frame_ancestors(value: Any) -> list[str] | None:
    """The list as given, or ``ConfigError`` naming the entry that is not an origin (``https://host[:port]``)."""
    if value is None:
        return None
    if not isinstance(value, list) or len(value) > MAX_FRAME_ANCESTORS:
        raise ConfigError("frameAncestors", f"must be null or a list of at most {MAX_FRAME_ANCESTORS} origins")
    for index, entry in enumerate(value):
        if not isinstance(entry, str) or not (entry == _SELF or _ORIGIN.fullmatch(entry)):
            raise ConfigError(
                f"frameAncestors[{index}]", f"{entry!r} is not an origin like https://example.com[:port] or 'self'"
            )
    return list(value)


def embed_csp(frame_ancestors: Sequence[str] | None) -> str:
    """The embed page's Content-Security-Policy: strict, framable by the widget's origins (any site if none)."""
    ancestors = "*" if frame_ancestors is None else " ".join(frame_ancestors) or "'none'"
    return f"{_POLICY}; frame-ancestors {ancestors}"
