"""An indexed, immutable view of a valid definition: what the scheduler asks of a workflow.

Built once per (workflow, version) or per test run and cached, so scheduling never re-parses.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from flowdeck.domain.definition import (
    DEFAULT_NODE_TIMEOUT_SECONDS,
    EdgeSpec,
    NodeSpec,
    RetryPolicy,
    WorkflowDefinition,
    parse_definition,
)

__all__ = ("Graph",)

_DEFAULT_RETRY = RetryPolicy()


@dataclass(frozen=True, slots=True)
class Graph:
    definition: WorkflowDefinition
    nodes: Mapping[str, NodeSpec]
    outgoing: Mapping[str, tuple[EdgeSpec, ...]]
    incoming: Mapping[str, tuple[EdgeSpec, ...]]
    start_id: str
    sources: Mapping[str, frozenset[str]]
    topological_order: tuple[str, ...]
    default_handles: Mapping[str, str] = field(default_factory=dict)
    bodies: Mapping[str, frozenset[str]] = field(default_factory=dict)
    """Loop node -> every node reachable from its ``loop`` handle (nested bodies included)."""
    enclosing_loops: Mapping[str, str] = field(default_factory=dict)
    """Body node -> the innermost loop it runs in. Top-level nodes are absent."""
    has_any_join: bool = False
    """Some node runs on its first arriving edge: its context can depend on timing."""
    _ancestors: dict[str, frozenset[str]] = field(default_factory=dict, compare=False, repr=False)

    @classmethod
    def build(cls, definition: WorkflowDefinition, default_handles: Mapping[str, str] | None = None) -> Graph:
        """Index a definition. ``default_handles`` maps node type -> the handle an edge without one uses."""
        nodes = {node.id: node for node in definition.nodes}
        outgoing: dict[str, list[EdgeSpec]] = defaultdict(list)
        incoming: dict[str, list[EdgeSpec]] = defaultdict(list)
        for edge in definition.edges:
            outgoing[edge.source].append(edge)
            incoming[edge.target].append(edge)
        handles = dict(default_handles or {})
        start_ids = [node.id for node in definition.nodes if node.type == "start"]
        if len(start_ids) != 1:
            raise ValueError(f"a runnable graph has exactly one start node, found {len(start_ids)}")
        return cls(
            definition=definition,
            nodes=nodes,
            outgoing={node_id: tuple(edges) for node_id, edges in outgoing.items()},
            incoming={node_id: tuple(edges) for node_id, edges in incoming.items()},
            start_id=start_ids[0],
            sources={node_id: frozenset(e.source for e in edges) for node_id, edges in incoming.items()},
            topological_order=_topological_order(nodes, outgoing, incoming),
            default_handles=handles,
            has_any_join=any(node.join_mode == "any" for node in definition.nodes),
            **_loop_structure(nodes, outgoing, handles),
        )

    @classmethod
    def from_json(cls, raw: Any, default_handles: Mapping[str, str] | None = None) -> Graph:
        return cls.build(parse_definition(raw), default_handles)

    def node(self, node_id: str) -> NodeSpec:
        return self.nodes[node_id]

    def edges_from(self, node_id: str) -> tuple[EdgeSpec, ...]:
        return self.outgoing.get(node_id, ())

    def edges_into(self, node_id: str) -> tuple[EdgeSpec, ...]:
        return self.incoming.get(node_id, ())

    def handle_of(self, edge: EdgeSpec) -> str:
        """The output handle an edge leaves from (an edge without ``sourceHandle`` uses the type's first)."""
        if edge.source_handle is not None:
            return edge.source_handle
        return self.default_handles.get(self.nodes[edge.source].type, "default")

    def retry_policy(self, node_id: str) -> RetryPolicy:
        return self.nodes[node_id].retry or _DEFAULT_RETRY

    def timeout_seconds(self, node_id: str) -> float:
        node = self.nodes[node_id]
        limit = self.definition.options.timeout_seconds
        return min(node.timeout_seconds or DEFAULT_NODE_TIMEOUT_SECONDS, limit)

    def ancestors(self, node_id: str) -> frozenset[str]:
        """Every node with a path to ``node_id``: the nodes whose outputs its context holds."""
        known = self._ancestors.get(node_id)
        if known is None:
            found: set[str] = set()
            stack = list(self.sources.get(node_id, ()))
            while stack:
                current = stack.pop()
                if current not in found:
                    found.add(current)
                    stack.extend(self.sources.get(current, ()))
            known = self._ancestors[node_id] = frozenset(found)
        return known

    def is_loop(self, node_id: str) -> bool:
        return node_id in self.bodies

    def loop_of(self, node_id: str) -> str | None:
        """The innermost loop whose iterations run ``node_id`` (``None`` at top level)."""
        return self.enclosing_loops.get(node_id)

    def direct_body(self, loop_id: str) -> frozenset[str]:
        return frozenset(n for n in self.bodies[loop_id] if self.enclosing_loops.get(n) == loop_id)

    def closes_iteration(self, node_id: str) -> bool:
        """Whether, once ``node_id`` finished in an iteration, no other node of that iteration can still
        run: every other node of its loop's body is upstream of it and no join there runs early (``any``)."""
        loop_id = self.loop_of(node_id)
        if loop_id is None or self.has_any_join:
            return False
        return self.bodies[loop_id] <= self.ancestors(node_id) | {node_id}

    def body_sinks(self, loop_id: str) -> list[str]:
        """The direct body nodes with no outgoing edge: their outputs are an iteration's result."""
        direct = self.direct_body(loop_id)
        return [n for n in self.topological_order if n in direct and not self._onward_edges(n)]

    def _onward_edges(self, node_id: str) -> list[EdgeSpec]:
        """Outgoing edges that continue the flow (a loop's ``loop`` edges lead into its own iterations)."""
        edges = self.outgoing.get(node_id, ())
        if self.is_loop(node_id):
            return [e for e in edges if self.handle_of(e) != "loop"]
        return list(edges)

    def has_single_source(self, node_id: str) -> bool:
        """Every incoming edge comes from one node: its result decides this node alone, no barrier needed."""
        return len(self.sources.get(node_id, ())) <= 1


def _topological_order(
    nodes: Mapping[str, NodeSpec], outgoing: Mapping[str, list[EdgeSpec]], incoming: Mapping[str, list[EdgeSpec]]
) -> tuple[str, ...]:
    """Kahn's algorithm, stable in definition order. Raises on a cycle (validation rejects those first)."""
    remaining = {node_id: len(incoming.get(node_id, ())) for node_id in nodes}
    ready = [node_id for node_id, count in remaining.items() if count == 0]
    order: list[str] = []
    while ready:
        node_id = ready.pop()
        order.append(node_id)
        for edge in outgoing.get(node_id, ()):
            remaining[edge.target] -= 1
            if remaining[edge.target] == 0:
                ready.append(edge.target)
    if len(order) != len(nodes):
        raise ValueError("the graph has a cycle")
    return tuple(order)


def _loop_structure(
    nodes: Mapping[str, NodeSpec], outgoing: Mapping[str, list[EdgeSpec]], handles: Mapping[str, str]
) -> dict[str, Any]:
    """Bodies of loop nodes and, for each body node, its innermost loop (nested bodies are subsets)."""
    bodies: dict[str, frozenset[str]] = {}
    for loop_id, node in nodes.items():
        if node.type != "loop":
            continue
        found: set[str] = set()
        stack = [
            e.target for e in outgoing.get(loop_id, ()) if (e.source_handle or handles.get("loop", "loop")) == "loop"
        ]
        while stack:
            current = stack.pop()
            if current not in found:
                found.add(current)
                stack.extend(e.target for e in outgoing.get(current, ()))
        bodies[loop_id] = frozenset(found)
    enclosing: dict[str, str] = {}
    for loop_id in sorted(bodies, key=lambda lid: len(bodies[lid]), reverse=True):
        for member in bodies[loop_id]:
            enclosing[member] = loop_id  # smaller (inner) bodies are visited later and win
    return {"bodies": bodies, "enclosing_loops": enclosing}
