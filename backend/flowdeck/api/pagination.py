"""Opaque cursors for ``{items, nextCursor}`` lists: the position after a page, as URL-safe base64 JSON."""

from __future__ import annotations

import base64
import binascii
from typing import Annotated, Any, Final, TypeVar

import msgspec
from litestar.exceptions import ValidationException
from msgspec import Meta

__all__ = ("DEFAULT_LIMIT", "MAX_LIMIT", "NumberKey", "TimeKey", "decode_cursor", "encode_cursor")

DEFAULT_LIMIT: Final = 50
MAX_LIMIT: Final = 200
T = TypeVar("T")

NumberKey = Annotated[int, Meta(ge=0, le=2**62)]
"""A position that is a number: a log id, a version."""
TimeKey = tuple[float, Annotated[str, Meta(max_length=64, pattern=r"^[A-Za-z0-9_-]*$")]]
"""A position that is (time, id) of the last item of a page."""


def encode_cursor(position: Any) -> str | None:
    if position is None:
        return None
    return base64.urlsafe_b64encode(msgspec.json.encode(position)).decode().rstrip("=")


def decode_cursor(cursor: str | None, kind: Any) -> Any:
    """The position a cursor stands for; a 400 if it was not made by ``encode_cursor`` for this list."""
    if cursor is None or cursor == "":
        return None
    try:
        if len(cursor) > 512:
            raise ValueError("too long")
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
        return msgspec.json.decode(raw, type=kind)
    except (ValueError, binascii.Error, msgspec.DecodeError) as exc:
        raise ValidationException(
            detail="the cursor is not valid for this list", extra=[{"key": "cursor", "source": "query"}]
        ) from exc
