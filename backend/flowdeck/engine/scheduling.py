"""Pure scheduling rules (SPEC §2 "Edges, skipping, joins"): which targets a finished node resolves.

A finished node resolves every outgoing edge: the ones leaving from its ``nextHandle`` are *taken*,
the others are not; a SKIPPED node resolves all of its edges as not taken. A target then
- with ``joinMode: all`` runs once every incoming edge is resolved and at least one was taken;
- with ``joinMode: any`` runs on its first taken edge;
- becomes SKIPPED when every incoming edge is resolved and none was taken.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import Enum

from flowdeck.domain.graph import Graph

__all__ = ("Verdict", "edge_deltas", "loop_entry", "node_verdict", "settle_from_states", "sole_successor")

EdgeCounts = tuple[int, int]
"""(resolved incoming edges, taken incoming edges)."""


class Verdict(Enum):
    WAIT = "wait"
    RUN = "run"
    SKIP = "skip"


def edge_deltas(graph: Graph, node_id: str, handle: str | None) -> dict[str, EdgeCounts]:
    """The (resolved, taken) counts a node adds to each target; ``handle=None`` means it was skipped."""
    deltas: dict[str, EdgeCounts] = {}
    edges = graph.edges_from(node_id)
    if graph.is_loop(node_id):
        # A loop's ``loop`` edges lead into its iterations, its other edges out of it: never both at once.
        into_body = handle == "loop"
        edges = tuple(e for e in edges if (graph.handle_of(e) == "loop") is into_body)
    for edge in edges:
        resolved, taken = deltas.get(edge.target, (0, 0))
        is_taken = handle is not None and graph.handle_of(edge) == handle
        deltas[edge.target] = (resolved + 1, taken + int(is_taken))
    return deltas


def node_verdict(graph: Graph, node_id: str, counts: EdgeCounts, newly_taken: int) -> Verdict:
    """Decide a target from its counts *after* an update that added ``newly_taken`` taken edges."""
    resolved, taken = counts
    total = len(graph.edges_into(node_id))
    if graph.node(node_id).join_mode == "any" and taken > 0:
        return Verdict.RUN if taken == newly_taken else Verdict.WAIT  # only the first arrival runs it
    if resolved < total:
        return Verdict.WAIT
    return Verdict.SKIP if taken == 0 else Verdict.RUN


def sole_successor(graph: Graph, node_id: str, handle: str) -> str | None:
    """The one node a result on ``handle`` starts when that is *all* it decides, else ``None``.

    True of a chain's step: one target, fed by this node alone (no barrier), which runs; nothing
    is skipped. Such a decision can be taken in one statement (``StateManager.chain_step``).
    """
    return None if graph.is_loop(node_id) else _sole_target(graph, node_id, handle)


def loop_entry(graph: Graph, loop_id: str) -> str | None:
    """The one node each iteration of a loop starts with, when its ``loop`` handle has exactly one."""
    return _sole_target(graph, loop_id, "loop")


def _sole_target(graph: Graph, node_id: str, handle: str) -> str | None:
    deltas = edge_deltas(graph, node_id, handle)
    if len(deltas) != 1:
        return None
    ((target, counts),) = deltas.items()
    if not graph.has_single_source(target) or node_verdict(graph, target, counts, counts[1]) is not Verdict.RUN:
        return None
    return target


@dataclass(frozen=True, slots=True)
class Settlement:
    """What a whole-run recomputation decided (partial retry)."""

    run: list[str]
    skip: list[str]
    barriers: dict[str, EdgeCounts]


def settle_from_states(graph: Graph, handles: Mapping[str, str | None], undecided: set[str]) -> Settlement:
    """Recompute every barrier from the terminal nodes and decide the ``undecided`` nodes.

    ``handles`` maps each terminal node to the handle it completed on (``None`` for skipped).
    Nodes are visited in topological order, so a node skipped here resolves its targets before they
    are looked at.
    """
    counts: dict[str, EdgeCounts] = {}
    handles = dict(handles)
    run: list[str] = []
    skip: list[str] = []
    for node_id in graph.topological_order:
        if node_id in undecided and node_id != graph.start_id:
            resolved, taken = counts.get(node_id, (0, 0))
            verdict = node_verdict(graph, node_id, (resolved, taken), taken)
            if verdict is Verdict.RUN:
                run.append(node_id)
            elif verdict is Verdict.SKIP:
                skip.append(node_id)
                handles[node_id] = None
        if node_id in handles:
            for target, (r, t) in edge_deltas(graph, node_id, handles[node_id]).items():
                resolved, taken = counts.get(target, (0, 0))
                counts[target] = (resolved + r, taken + t)
    barriers = {node_id: c for node_id, c in counts.items() if not graph.has_single_source(node_id)}
    return Settlement(run=run, skip=skip, barriers=barriers)
