"""Database values to JSON: what a result row may contain once it leaves the query engine.

datetime, date and time become ISO 8601 strings; ``Decimal`` a string (exact: ``"12.50"``); timedelta
its seconds; bytes base64; UUIDs, IP addresses and anything else unknown ``str``; NaN and infinities
``null`` (JSON has no such numbers); JSON columns their decoded value, recursively made safe.
"""

from __future__ import annotations

import base64
import datetime as dt
import math
import uuid
from collections.abc import Mapping
from decimal import Decimal
from typing import Any

__all__ = ("json_safe",)

_MAX_DEPTH = 64


def _scalar(value: Any) -> Any:
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, Decimal):
        return str(value) if value.is_finite() else None
    if isinstance(value, dt.datetime | dt.date | dt.time):
        return value.isoformat()
    if isinstance(value, dt.timedelta):
        return value.total_seconds()
    if isinstance(value, bytes | bytearray | memoryview):
        return base64.b64encode(bytes(value)).decode("ascii")
    if isinstance(value, uuid.UUID):
        return str(value)
    return str(value)


def json_safe(value: Any, _depth: int = 0) -> Any:
    """``value`` as plain JSON types (``None``, bool, int, float, str, list, dict with str keys)."""
    if value is None or isinstance(value, bool | int | str):
        return value
    if _depth >= _MAX_DEPTH:
        return str(value)
    if isinstance(value, Mapping):
        return {str(k): json_safe(v, _depth + 1) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [json_safe(v, _depth + 1) for v in value]
    return _scalar(value)
