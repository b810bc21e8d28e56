"""JSON columns' encoding for both dialects (msgspec: several times faster than the standard library here)."""

from __future__ import annotations

from typing import Any

import msgspec

__all__ = ("json_dumps", "json_loads")

_encoder = msgspec.json.Encoder()
_decoder = msgspec.json.Decoder()


def json_dumps(value: Any) -> str:
    return _encoder.encode(value).decode()


def json_loads(value: str | bytes) -> Any:
    return _decoder.decode(value)
