"""The definition as the checks index it: nodes by id, edges by source and target."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from flowdeck.handlers.base import NodeHandler

__all__ = ("CheckedEdge", "CheckedGraph", "CheckedNode")


@dataclass(slots=True)
class CheckedNode:
    index: int
    id: str
    type: str | None
    handler: NodeHandler | None
    config: dict[str, Any]
    variable: str
    explicit_variable: bool


@dataclass(frozen=True, slots=True)
class CheckedEdge:
    id: str | None
    source: str
    target: str
    handle: str | None
    where: str  # how messages name the edge


@dataclass(slots=True)
class CheckedGraph:
    nodes: dict[str, CheckedNode] = field(default_factory=dict)
    edges: list[CheckedEdge] = field(default_factory=list)
    outgoing: dict[str, list[CheckedEdge]] = field(default_factory=dict)
    incoming: dict[str, list[CheckedEdge]] = field(default_factory=dict)

    def add_edge(self, edge: CheckedEdge) -> None:
        self.edges.append(edge)
        self.outgoing[edge.source].append(edge)
        self.incoming[edge.target].append(edge)
