"""Loop-scope paths: where a node runs. "" is the top level, "3" item 3 of a loop there, "3.1" item 1
of a loop nested in that iteration. All the arithmetic on these paths lives here (PostgreSQL's
iteration step builds a child path in SQL too; the equivalence test holds it to ``child_scope``).
"""

from __future__ import annotations

__all__ = ("child_scope", "item_index", "nested_pattern", "parent_scope", "visible_scopes")


def child_scope(scope: str, index: int) -> str:
    """The iteration path of item ``index`` of a loop running in ``scope``: "3", or "3.1" when nested."""
    return f"{scope}.{index}" if scope else str(index)


def parent_scope(scope: str) -> str:
    """The scope the loop of iteration ``scope`` runs in: "3.1" -> "3", "3" -> ""."""
    return scope.rsplit(".", 1)[0] if "." in scope else ""


def item_index(scope: str) -> int:
    """The item of its loop an iteration runs: "3.1" -> 1."""
    return int(scope.rsplit(".", 1)[-1])


def visible_scopes(scope: str) -> list[str]:
    """The scopes whose outputs a node in ``scope`` sees: "3.1" sees "", "3" and "3.1"."""
    if not scope:
        return [""]
    parts = scope.split(".")
    return ["", *(".".join(parts[: i + 1]) for i in range(len(parts)))]


def nested_pattern(scope: str) -> str:
    """A LIKE pattern matching every scope nested in ``scope``."""
    return f"{scope}.%"
