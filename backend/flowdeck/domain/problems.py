"""A problem found in a workflow definition (SPEC §1): every problem is reported at once."""

from __future__ import annotations

from typing import Any, Literal

import msgspec

__all__ = ("Problem", "has_errors")

Severity = Literal["error", "warning"]


class Problem(msgspec.Struct, frozen=True, rename="camel", omit_defaults=True):
    code: str
    message: str
    severity: Severity = "error"
    node_id: str | None = None
    edge_id: str | None = None
    path: str | None = None

    def to_json(self) -> dict[str, Any]:
        return msgspec.to_builtins(self)  # type: ignore[no-any-return]


def has_errors(problems: list[Problem]) -> bool:
    return any(p.severity == "error" for p in problems)
