"""What every check shares: the problems found so far, how to add one, and safe renderings of hostile values."""

from __future__ import annotations

import math
from typing import Any

from flowdeck.domain.definition import DEFAULT_RUN_TIMEOUT_SECONDS
from flowdeck.domain.problems import Problem, Severity
from flowdeck.handlers.registry import HandlerRegistry

__all__ = ("Checks", "is_number", "quoted_handles", "show", "type_name")


def show(value: Any, limit: int = 40) -> str:
    """A short, safe rendering of a (possibly hostile) value for a message: 'text', 12, null, true, [...]."""
    if value is None or isinstance(value, bool):
        return "null" if value is None else str(value).lower()
    text = value if isinstance(value, str) else repr(value)
    text = text.encode("unicode_escape", "backslashreplace").decode("ascii")
    if len(text) > limit:
        text = text[:limit] + "…"
    return f"'{text}'" if isinstance(value, str) else text


def quoted_handles(handles: tuple[str, ...]) -> str:
    return ", ".join(f"'{handle}'" for handle in handles)


def is_number(value: Any) -> bool:
    """A finite JSON number (not a bool; ints within 64 bits, which every consumer can convert)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return False
    return math.isfinite(value) if isinstance(value, float) else abs(value) < 2**63


def type_name(value: Any) -> str:
    names = {dict: "an object", list: "a list", str: "a string", bool: "a boolean", type(None): "null"}
    return names.get(type(value), "a number" if is_number(value) else type(value).__name__)


class Checks:
    """The problems of one definition, and what the checks need to know while finding them."""

    def __init__(self, registry: HandlerRegistry) -> None:
        self.registry = registry
        self.default_handles = registry.default_handles()
        self.problems: list[Problem] = []
        self.run_timeout = DEFAULT_RUN_TIMEOUT_SECONDS

    # --------------------------------------------------------------------------------- reporting

    def add(
        self,
        code: str,
        message: str,
        *,
        node_id: str | None = None,
        edge_id: str | None = None,
        path: str | None = None,
        severity: Severity = "error",
    ) -> None:
        self.problems.append(Problem(code, message, severity, node_id, edge_id, path))

    def bad_field(
        self,
        where: str,
        path: str,
        expected: str,
        value: Any,
        *,
        node_id: str | None = None,
        edge_id: str | None = None,
    ) -> None:
        message = f"{where}: {path} must be {expected}, not {show(value)}"
        self.add("invalid_field", message, node_id=node_id, edge_id=edge_id, path=path)
