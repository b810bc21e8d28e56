"""The run-input fields a workflow reads: what a caller (a ``workflow`` node, the run dialog) should pass.

Every ``ctx.input.X`` in the nodes' templates and condition and switch expressions, and every ``ctx['input']['X']``
or ``ctx['input'].get('X')`` in their Python code. A field read only through a variable
(``data = ctx['input']; data['X']``) is not found: the list is a guide for the editor, not a contract.
"""

from __future__ import annotations

import ast
from typing import Any

from flowdeck.sandbox.templates import referenced_input_fields

__all__ = ("workflow_inputs",)

_EXPRESSION_LISTS = {"condition": "branches", "switch": "cases"}
"""Node type -> the config list whose items carry a bare ``expression``."""


def workflow_inputs(definition: Any) -> list[str]:
    """The sorted names of the run-input fields the definition's nodes read."""
    nodes = definition.get("nodes") if isinstance(definition, dict) else None
    found: set[str] = set()
    for node in nodes if isinstance(nodes, list) else []:
        config = node.get("config") if isinstance(node, dict) else None
        if not isinstance(config, dict):
            continue
        found |= referenced_input_fields(config)
        key = _EXPRESSION_LISTS.get(node.get("type"))
        items = config.get(key) if key else None
        for item in items if isinstance(items, list) else []:
            if isinstance(item, dict) and isinstance(item.get("expression"), str):
                found |= referenced_input_fields(item["expression"], expression=True)
        if node.get("type") == "python" and isinstance(config.get("code"), str):
            found |= _python_input_fields(config["code"])
    return sorted(found)


def _python_input_fields(code: str) -> set[str]:
    body = "def node(ctx):\n" + "".join(f"    {line}\n" for line in code.splitlines() or ["pass"])
    try:
        tree = ast.parse(body)
    except (SyntaxError, ValueError):
        return set()
    found: set[str] = set()
    for item in ast.walk(tree):
        if isinstance(item, ast.Subscript) and _is_input(item.value):
            key = _constant(item.slice)
        elif isinstance(item, ast.Call) and isinstance(item.func, ast.Attribute) and item.func.attr == "get":
            key = _constant(item.args[0]) if item.args and _is_input(item.func.value) else None
        else:
            continue
        if key is not None:
            found.add(key)
    return found


def _is_input(value: ast.expr) -> bool:
    """``ctx['input']`` or ``ctx.get('input')``."""
    if isinstance(value, ast.Subscript):
        return isinstance(value.value, ast.Name) and value.value.id == "ctx" and _constant(value.slice) == "input"
    if isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and value.func.attr == "get":
        owner = value.func.value
        return (
            isinstance(owner, ast.Name)
            and owner.id == "ctx"
            and bool(value.args)
            and _constant(value.args[0]) == "input"
        )
    return False


def _constant(value: ast.expr) -> str | None:
    return value.value if isinstance(value, ast.Constant) and isinstance(value.value, str) else None
