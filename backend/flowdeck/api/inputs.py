"""Checks on client JSON the engine will store: what a database cannot hold, or should not have to.

PostgreSQL rejects NUL characters in text and JSONB, and deeply nested documents cost every reader;
both are refused up front with a 400 that names the field, so nothing is partly stored.
"""

from __future__ import annotations

from typing import Any, Final

from flowdeck.domain.problems import Problem

__all__ = ("MAX_JSON_DEPTH", "InputInvalidError", "check_json", "json_problems")

MAX_JSON_DEPTH: Final = 64
_MAX_REPORTED: Final = 20


class InputInvalidError(Exception):
    """Request data the API refuses; ``problems`` names every field at fault."""

    def __init__(self, problems: list[Problem]) -> None:
        super().__init__("the request is invalid: " + "; ".join(p.message for p in problems[:5]))
        self.problems = problems


def _child(path: str, key: str | int) -> str:
    if isinstance(key, int):
        return f"{path}[{key}]"
    return f"{path}.{key}" if path else key


def json_problems(value: Any, path: str, *, max_depth: int = MAX_JSON_DEPTH) -> list[Problem]:
    """Every NUL character (in strings or keys) and every place nested deeper than ``max_depth``.

    ``path`` names ``value`` in the messages (``""`` for a whole body, whose keys then lead the paths).
    """
    problems: list[Problem] = []
    stack: list[tuple[Any, str, int]] = [(value, path, 0)]
    while stack and len(problems) < _MAX_REPORTED:
        item, where, depth = stack.pop()
        if isinstance(item, str):
            if "\x00" in item:
                problems.append(Problem("invalid_value", f"{where}: text cannot contain NUL characters", path=where))
        elif isinstance(item, dict | list):
            if depth >= max_depth:
                message = f"{where}: JSON is nested more than {max_depth} levels deep"
                problems.append(Problem("too_deep", message, path=where))
                continue
            entries = item.items() if isinstance(item, dict) else enumerate(item)
            for key, child in entries:
                child_path = _child(where, key)
                if isinstance(key, str) and "\x00" in key:
                    message = f"{where}: keys cannot contain NUL characters"
                    problems.append(Problem("invalid_value", message, path=where))
                stack.append((child, child_path, depth + 1))
    return problems


def check_json(**fields: Any) -> None:
    """Raise ``InputInvalidError`` listing the problems of every named field."""
    problems = [p for name, value in fields.items() for p in json_problems(value, name)]
    if problems:
        raise InputInvalidError(problems)
