"""Which ``ctx`` keys a ``python`` node's code reads, found without running it.

``ctx['X']``, ``ctx["X"]`` and ``ctx.get('X')`` read ``X``. Any other use of ``ctx`` (``ctx[name]``, a
loop over it, passing it on) could read anything: the answer is then ``None``, "cannot tell".
"""

from __future__ import annotations

import ast
import textwrap

__all__ = ("code_reads",)

_CTX = "ctx"


def code_reads(code: str) -> set[str] | None:
    """The top-level ``ctx`` keys ``code`` (a function body) reads; ``None`` when that cannot be told."""
    try:
        tree = ast.parse(f"def _user(ctx):\n{textwrap.indent(code, '    ')}\n")
    except (SyntaxError, ValueError):
        return None
    reads: set[str] = set()
    understood: set[int] = set()  # the uses of ``ctx`` read as a key lookup (or a label call)
    for node in ast.walk(tree):
        found = _lookup(node)
        if found is not None:
            key, ctx = found
            understood.add(id(ctx))
            if key is not None:
                reads.add(key)
    for node in ast.walk(tree):
        if _is_ctx(node) and id(node) not in understood:
            return None  # ctx used another way: it could read anything
    return reads


def _lookup(node: ast.AST) -> tuple[str | None, ast.AST] | None:
    """``(key, the ctx name)`` for ``ctx['key']`` and ``ctx.get('key', ...)``; ``(None, ...)`` for
    ``ctx.label(...)``, which reads nothing; ``None`` for anything else."""
    if isinstance(node, ast.Subscript) and _is_ctx(node.value):
        key = _constant_str(node.slice)
        return None if key is None else (key, node.value)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and _is_ctx(node.func.value):
        if node.func.attr == "label":
            return None, node.func.value
        if node.func.attr == "get" and node.args:
            key = _constant_str(node.args[0])
            return None if key is None else (key, node.func.value)
    return None


def _is_ctx(node: ast.AST) -> bool:
    return isinstance(node, ast.Name) and node.id == _CTX


def _constant_str(node: ast.AST) -> str | None:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None
