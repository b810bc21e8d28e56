"""Warnings about output variables: duplicates, references nobody upstream provides, outputs nobody reads."""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from typing import Final

from flowdeck.sandbox.templates import nested_strings
from flowdeck.validation.reads import template_references
from flowdeck.validation.report import Checks
from flowdeck.validation.shapes import CheckedGraph, CheckedNode

__all__ = ("VariableChecks",)

_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_ALWAYS_KNOWN: Final = frozenset({"input"})


class VariableChecks:
    """Warnings about ``outputVariable``: duplicates, references nobody upstream provides, outputs nobody reads."""

    def __init__(
        self, validator: Checks, graph: CheckedGraph, order: list[str], bodies: Mapping[str, set[str]]
    ) -> None:
        self.v = validator
        self.graph = graph
        self.order = order
        self.in_loop_body = set().union(*bodies.values()) if bodies else set()
        self.has_waits = any(node.type == "wait" for node in graph.nodes.values())
        """``ctx.run`` (``resumeUrls``) exists in a run with ``wait`` nodes (docs/waits.md)."""

    def run(self) -> None:
        self.check_duplicates()
        references = {node.id: list(self.references(node)) for node in self.graph.nodes.values()}
        self.check_unknown(references)
        self.check_unused()

    def check_duplicates(self) -> None:
        owner: dict[str, str] = {}
        for node in self.graph.nodes.values():
            first = owner.setdefault(node.variable, node.id)
            if first != node.id:
                message = f"nodes '{first}' and '{node.id}' both write the output variable '{node.variable}'"
                self.v.add(
                    "duplicate_output_variable", message, node_id=node.id, path="outputVariable", severity="warning"
                )

    def references(self, node: CheckedNode) -> Iterator[tuple[str, str]]:
        """(path, variable) for every ``ctx.X`` in the node's templates and expressions (condition, switch)."""
        if node.handler is None:
            return iter(())
        return template_references(node.handler, node.config)

    def ancestors(self) -> dict[str, int]:
        """Node id -> bitset of its ancestors (bit = node index), over the acyclic part of the graph."""
        bits = {node_id: 1 << node.index for node_id, node in self.graph.nodes.items()}
        ancestors = dict.fromkeys(self.order, 0)
        for node_id in self.order:
            for edge in self.graph.outgoing[node_id]:
                if edge.target in ancestors:
                    ancestors[edge.target] |= ancestors[node_id] | bits[node_id]
        return ancestors

    def check_unknown(self, references: dict[str, list[tuple[str, str]]]) -> None:
        providers: dict[str, int] = {}
        for node in self.graph.nodes.values():
            providers[node.variable] = providers.get(node.variable, 0) | 1 << node.index
        ancestors = self.ancestors() if any(references.values()) else {}
        for node_id, refs in references.items():
            if node_id not in ancestors:
                continue  # on a cycle: already an error
            reported: set[str] = set()
            for path, variable in refs:
                if variable in reported or self.known(node_id, variable, ancestors[node_id], providers):
                    continue
                reported.add(variable)
                message = (
                    f"node '{node_id}': {path} refers to ctx.{variable}, "
                    f"but no upstream node has the output variable '{variable}'"
                )
                self.v.add("unknown_variable", message, node_id=node_id, path=path, severity="warning")

    def known(self, node_id: str, variable: str, ancestors: int, providers: Mapping[str, int]) -> bool:
        if variable in _ALWAYS_KNOWN or (variable == "loop" and node_id in self.in_loop_body):
            return True
        if variable == "run" and self.has_waits:
            return True
        return bool(providers.get(variable, 0) & ancestors)

    def check_unused(self) -> None:
        words: set[str] = set()
        for node in self.graph.nodes.values():
            for _, text in nested_strings(node.config, ""):
                words.update(_WORD.findall(text))
        for node in self.graph.nodes.values():
            if node.explicit_variable and node.variable not in words:
                message = f"node '{node.id}': nothing refers to its output variable '{node.variable}'"
                self.v.add("unused_output", message, node_id=node.id, path="outputVariable", severity="warning")
