"""Checks over the indexed graph: start and end, cycles, reachability, depth and loop bodies."""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator
from typing import Final

from flowdeck.validation.limits import MAX_CYCLES_REPORTED, MAX_DEPTH
from flowdeck.validation.report import Checks
from flowdeck.validation.shapes import CheckedEdge, CheckedGraph
from flowdeck.validation.variables import VariableChecks

__all__ = ("GraphChecks",)

_LOOP_TYPE: Final = "loop"
_LOOP_HANDLE: Final = "loop"


class GraphChecks:
    """Checks over the indexed graph: start/end, cycles, reachability, depth, loop bodies, variables."""

    def __init__(self, validator: Checks, graph: CheckedGraph) -> None:
        self.v = validator
        self.graph = graph
        self.order = self.topological_order()

    def handle_of(self, edge: CheckedEdge) -> str | None:
        if edge.handle is not None:
            return edge.handle
        return self.v.default_handles.get(self.graph.nodes[edge.source].type or "")

    def run(self) -> None:
        start = self.check_start_and_end()
        if len(self.order) < len(self.graph.nodes):
            self.check_cycles()
        if start is not None:
            self.check_reachable(start)
        self.check_depth()
        bodies = self.check_loops()
        VariableChecks(self.v, self.graph, self.order, bodies).run()

    def check_start_and_end(self) -> str | None:
        starts = [node for node in self.graph.nodes.values() if node.type == "start"]
        if not starts:
            self.v.add("missing_start", "the workflow needs a 'start' node")
        for extra in starts[1:]:
            message = f"node '{extra.id}' is a second start node (the first is '{starts[0].id}'); there must be one"
            self.v.add("multiple_starts", message, node_id=extra.id)
        if not any(node.type == "end" for node in self.graph.nodes.values()):
            self.v.add("missing_end", "the workflow needs at least one 'end' node")
        return starts[0].id if starts else None

    def topological_order(self) -> list[str]:
        """Kahn's order of the nodes; nodes on or behind a cycle are left out."""
        indegree = {node_id: len(edges) for node_id, edges in self.graph.incoming.items()}
        ready = deque(node_id for node_id, degree in indegree.items() if degree == 0)
        order: list[str] = []
        while ready:
            node_id = ready.popleft()
            order.append(node_id)
            for edge in self.graph.outgoing[node_id]:
                indegree[edge.target] -= 1
                if indegree[edge.target] == 0:
                    ready.append(edge.target)
        return order

    def check_cycles(self) -> None:
        for cycle, edge_id in _find_cycles(self.graph)[:MAX_CYCLES_REPORTED]:
            message = f"cycle: {' -> '.join(cycle)}; a workflow must be acyclic"
            self.v.add("cycle", message, node_id=cycle[0], edge_id=edge_id)

    def check_reachable(self, start: str) -> None:
        seen = {start}
        queue = deque([start])
        while queue:
            for edge in self.graph.outgoing[queue.popleft()]:
                if edge.target not in seen:
                    seen.add(edge.target)
                    queue.append(edge.target)
        for node_id in self.graph.nodes:
            if node_id not in seen:
                self.v.add("unreachable_node", f"node '{node_id}' cannot be reached from '{start}'", node_id=node_id)

    def check_depth(self) -> None:
        depth: dict[str, int] = {}
        for node_id in self.order:
            here = depth.setdefault(node_id, 0)
            for edge in self.graph.outgoing[node_id]:
                depth[edge.target] = max(depth.get(edge.target, 0), here + 1)
        deepest = max(depth, key=lambda node_id: depth[node_id], default=None)
        if deepest is not None and depth[deepest] > MAX_DEPTH:
            message = (
                f"the longest path has {depth[deepest]} edges (ending at node '{deepest}'); the limit is {MAX_DEPTH}"
            )
            self.v.add("too_deep", message, node_id=deepest)

    def check_loops(self) -> dict[str, set[str]]:
        """Loop id -> body; reports edges that enter or leave a body the wrong way (SPEC §2)."""
        if self.v.registry.get(_LOOP_TYPE) is None:
            return {}
        bodies: dict[str, set[str]] = {}
        for loop in (node for node in self.graph.nodes.values() if node.type == _LOOP_TYPE):
            bodies[loop.id] = self.loop_body(loop.id)
            self.check_body_inputs(loop.id, bodies[loop.id])
        return bodies

    def loop_body(self, loop_id: str) -> set[str]:
        body: set[str] = set()
        stack = [edge for edge in self.graph.outgoing[loop_id] if self.handle_of(edge) == _LOOP_HANDLE]
        while stack:
            edge = stack.pop()
            if edge.target == loop_id:
                message = f"{edge.where} leads from the body of loop '{loop_id}' back to the loop itself"
                self.v.add("loop_body", message, node_id=edge.source, edge_id=edge.id)
            elif edge.target not in body:
                body.add(edge.target)
                stack.extend(self.graph.outgoing[edge.target])
        return body

    def check_body_inputs(self, loop_id: str, body: set[str]) -> None:
        for node_id in sorted(body, key=lambda n: self.graph.nodes[n].index):
            for edge in self.graph.incoming[node_id]:
                if (edge.source == loop_id and self.handle_of(edge) == _LOOP_HANDLE) or edge.source in body:
                    continue
                origin = (
                    f"the '{self.handle_of(edge)}' handle of loop '{loop_id}'"
                    if edge.source == loop_id
                    else f"node '{edge.source}' outside the body"
                )
                message = (
                    f"node '{node_id}' is in the body of loop '{loop_id}' but {edge.where} feeds it from "
                    f"{origin}; a loop body may only be entered through the loop's 'loop' handle"
                )
                self.v.add("loop_body", message, node_id=node_id, edge_id=edge.id)


def _find_cycles(graph: CheckedGraph) -> list[tuple[list[str], str | None]]:
    """Each distinct cycle once (one per DFS back edge, rotations merged), as ``[a, b, a]`` + closing edge id.

    Iterative: a 500-deep chain must not hit the recursion limit.
    """
    done: set[str] = set()
    found: dict[tuple[str, ...], tuple[list[str], str | None]] = {}
    for root in graph.nodes:
        if root in done:
            continue
        path, position = [root], {root: 0}
        stack: list[tuple[str, Iterator[CheckedEdge]]] = [(root, iter(graph.outgoing[root]))]
        while stack:
            node_id, edges = stack[-1]
            edge = next(edges, None)
            if edge is None:
                stack.pop()
                path.pop()
                del position[node_id]
                done.add(node_id)
            elif edge.target in position:
                cycle = path[position[edge.target] :]
                start = cycle.index(min(cycle))
                key = tuple(cycle[start:] + cycle[:start])
                found.setdefault(key, ([*cycle, edge.target], edge.id))
            elif edge.target not in done:
                position[edge.target] = len(path)
                path.append(edge.target)
                stack.append((edge.target, iter(graph.outgoing[edge.target])))
    return list(found.values())
