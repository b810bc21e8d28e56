"""The ``ctx`` names a node's config reads: its templates, its expressions and (a ``python`` node) its code."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from flowdeck.handlers.base import NodeHandler
from flowdeck.sandbox.templates import nested_strings, referenced_variables

__all__ = ("node_reads", "template_references")


def template_references(handler: NodeHandler, config: Mapping[str, Any]) -> Iterator[tuple[str, str]]:
    """(path, variable) for every ``ctx.X`` in the node's templates and expressions (condition, switch)."""
    for name in handler.template_fields:
        for path, text in nested_strings(config.get(name), f"config.{name}"):
            for variable in sorted(referenced_variables(text)):
                yield path, variable
    for path, expression in handler.expressions(config):
        for variable in sorted(referenced_variables(expression, expression=True)):
            yield path, variable


def node_reads(handler: NodeHandler | None, config: Mapping[str, Any]) -> list[str] | None:
    """The top-level ``ctx`` keys the node reads, sorted; ``None`` when its code could read any."""
    if handler is None:
        return []
    from_code = handler.code_reads(config)
    if from_code is None:
        return None
    return sorted(from_code | {variable for _, variable in template_references(handler, config)})
