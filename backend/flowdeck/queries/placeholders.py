"""``{{ name }}`` placeholders in saved HTTP queries: the named argument, nothing else.

Saved queries are not workflow templates: no expressions, no ``ctx``, only the query's declared
parameters. A string that is exactly one placeholder keeps the argument's native value (a number stays
a number in a JSON body); inside a longer string the value is rendered as text (``null`` as empty,
objects and lists as JSON). Path values are percent-encoded as one path segment.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator, Mapping
from typing import Any, Final

__all__ = ("IDENTIFIER", "PLACEHOLDER", "as_text", "placeholders", "render")

IDENTIFIER: Final = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
PLACEHOLDER: Final = re.compile(r"\{\{(.*?)\}\}", re.DOTALL)


def _strings(value: Any, path: str) -> Iterator[tuple[str, str]]:
    stack: list[tuple[str, Any]] = [(path, value)]
    while stack:
        where, item = stack.pop()
        if isinstance(item, str):
            yield where, item
        elif isinstance(item, dict):
            stack.extend((f"{where}.{key}" if where else str(key), child) for key, child in item.items())
        elif isinstance(item, list):
            stack.extend((f"{where}[{i}]", child) for i, child in enumerate(item))


def placeholders(value: Any, path: str = "") -> Iterator[tuple[str, str, bool]]:
    """``(path, inner text, is a valid name)`` for every ``{{ ... }}`` in the strings nested in ``value``."""
    for where, text in _strings(value, path):
        for match in PLACEHOLDER.finditer(text):
            inner = match.group(1).strip()
            yield where, inner, IDENTIFIER.fullmatch(inner) is not None


def as_text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dict | list):
        return json.dumps(value, separators=(",", ":"))
    return str(value)


def render(value: Any, args: Mapping[str, Any], encode: Callable[[str], str] | None = None) -> Any:
    """``value`` with its placeholders replaced by ``args`` (names were validated when the query was saved)."""
    if isinstance(value, str):
        whole = PLACEHOLDER.fullmatch(value)
        if whole is not None and encode is None:
            return args[whole.group(1).strip()]

        def replace(match: re.Match[str]) -> str:
            text = as_text(args[match.group(1).strip()])
            return encode(text) if encode else text

        return PLACEHOLDER.sub(replace, value)
    if isinstance(value, dict):
        return {key: render(child, args, encode) for key, child in value.items()}
    if isinstance(value, list):
        return [render(child, args, encode) for child in value]
    return value
