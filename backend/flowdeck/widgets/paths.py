"""Paths into JSON values: dot-separated keys, a number indexes a list, ``""`` is the whole value."""

from __future__ import annotations

from typing import Any, Final

from flowdeck.widgets.errors import ConfigError, PathError

__all__ = ("Path", "describe", "parse_path", "resolve")

Path = tuple[str, ...]
_SHOWN_KEYS: Final = 10


def parse_path(text: str, field: str) -> Path:
    """The segments of ``text``; a ``ConfigError`` on ``field`` when a segment is empty (``a..b``, ``.a``)."""
    if text == "":
        return ()
    parts = tuple(text.split("."))
    if "" in parts:
        raise ConfigError(field, f'"{text}" is not a path: segments are separated by single dots')
    return parts


def describe(value: Any) -> str:
    """How a value is named in messages: ``a string``, ``a number``, ``null`` ..."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "a list"
    return "an object"


def _keys(value: dict[str, Any]) -> str:
    keys = list(value)
    shown = ", ".join(str(k) for k in keys[:_SHOWN_KEYS])
    return (shown + ", …" if len(keys) > _SHOWN_KEYS else shown) or "none"


def _step(current: Any, part: str) -> tuple[bool, Any]:
    if isinstance(current, dict):
        return (True, current[part]) if part in current else (False, None)
    if isinstance(current, list) and part.isdigit() and int(part) < len(current):
        return True, current[int(part)]
    return False, None


def _why_missing(container: Any, prefix: str) -> str:
    where = "" if not prefix else f' of "{prefix}"'
    if isinstance(container, dict):
        return f"keys{where}: {_keys(container)}"
    if isinstance(container, list):
        return f'"{prefix}" is a list of {len(container)}' if prefix else f"the value is a list of {len(container)}"
    return f'"{prefix}" is {describe(container)}' if prefix else f"the value is {describe(container)}"


def resolve(value: Any, path: Path, field: str, where: str = " in the output") -> Any:
    """The value at ``path``; a ``PathError`` on ``field`` saying what was found instead."""
    current = value
    for depth, part in enumerate(path):
        found, child = _step(current, part)
        if not found:
            text, prefix = ".".join(path), ".".join(path[:depth])
            raise PathError(field, f'"{text}" is missing{where} ({_why_missing(current, prefix)})')
        current = child
    return current
