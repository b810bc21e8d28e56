"""A sync widget's run input, built from the request's query parameters (``config.inputs``)."""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from typing import Any, Final

import msgspec

from flowdeck.widgets.config import InputSpec
from flowdeck.widgets.errors import InputParamError

__all__ = ("build_input",)

_INTEGER: Final = re.compile(r"^[+-]?\d{1,18}$")
_TRUE: Final = frozenset({"true", "1", "yes", "on"})
_FALSE: Final = frozenset({"false", "0", "no", "off"})


def _number(text: str) -> int | float:
    if _INTEGER.match(text.strip()):
        return int(text)
    number = float(text)  # ValueError when it is not one
    if not math.isfinite(number):
        raise ValueError("not a finite number")
    return number


def _convert(spec: InputSpec, text: str) -> Any:
    try:
        if spec.type == "number":
            return _number(text)
        if spec.type == "boolean":
            lowered = text.strip().lower()
            if lowered not in _TRUE | _FALSE:
                raise ValueError(text)
            return lowered in _TRUE
        if spec.type == "json":
            return msgspec.json.decode(text)
    except (ValueError, msgspec.DecodeError) as exc:
        raise InputParamError(spec.param, f"{text[:50]!r} is not a valid {spec.type}") from exc
    return text


def build_input(specs: Sequence[InputSpec], query: Mapping[str, Sequence[str]]) -> dict[str, Any]:
    """``input[field]`` for every mapped parameter; unknown, repeated or missing required ones are refused."""
    known = {spec.param for spec in specs}
    for param in query:
        if param not in known:
            takes = ", ".join(sorted(known)) or "none"
            raise InputParamError(param, f"this widget takes no query parameter {param!r} (it takes: {takes})")
    run_input: dict[str, Any] = {}
    for spec in specs:
        values = query.get(spec.param, ())
        if len(values) > 1:
            raise InputParamError(spec.param, "is given more than once")
        if values:
            run_input[spec.field] = _convert(spec, values[0])
        elif spec.required:
            raise InputParamError(spec.param, "is required")
        elif not isinstance(spec.default, msgspec.UnsetType):
            run_input[spec.field] = spec.default
    return run_input
