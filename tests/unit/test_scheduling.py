"""The scheduling rules of SPEC §2, without a database."""

from __future__ import annotations

import pytest

from flowdeck.domain.graph import Graph
from flowdeck.engine.scheduling import Verdict, edge_deltas, node_verdict, settle_from_states
from tests.support.graphs import definition, diamond, edge, end, node

HANDLES = {"step": "success", "start": "default", "delay": "default"}


def graph(d: dict) -> Graph:
    return Graph.from_json(d, HANDLES)


def test_a_finished_node_takes_only_the_edges_of_its_handle() -> None:
    g = graph(
        definition(
            [node("start", "start"), node("cond", "condition"), node("a"), node("b"), end()],
            [
                edge("start", "cond"),
                edge("cond", "a", "yes"),
                edge("cond", "b", "else"),
                edge("a", "end"),
                edge("b", "end"),
            ],
        )
    )
    assert edge_deltas(g, "cond", "yes") == {"a": (1, 1), "b": (1, 0)}
    assert edge_deltas(g, "cond", None) == {"a": (1, 0), "b": (1, 0)}  # a skipped node takes nothing


def test_an_edge_without_source_handle_leaves_from_the_primary_handle() -> None:
    g = graph(definition([node("start", "start"), node("a"), end()], [edge("start", "a"), edge("a", "end")]))
    assert edge_deltas(g, "a", "success") == {"end": (1, 1)}
    assert edge_deltas(g, "a", "error") == {"end": (1, 0)}


@pytest.mark.parametrize(
    ("counts", "newly_taken", "verdict"),
    [
        ((1, 1), 1, Verdict.WAIT),
        ((2, 1), 0, Verdict.RUN),
        ((2, 2), 1, Verdict.RUN),
        ((2, 0), 0, Verdict.SKIP),
        ((1, 0), 0, Verdict.WAIT),
    ],
)
def test_join_all_waits_for_every_edge(counts: tuple[int, int], newly_taken: int, verdict: Verdict) -> None:
    g = graph(diamond(2, "all"))
    assert node_verdict(g, "join", counts, newly_taken) is verdict


@pytest.mark.parametrize(
    ("counts", "newly_taken", "verdict"),
    [
        ((1, 1), 1, Verdict.RUN),
        ((2, 2), 1, Verdict.WAIT),
        ((1, 0), 0, Verdict.WAIT),
        ((2, 1), 1, Verdict.RUN),
        ((2, 0), 0, Verdict.SKIP),
    ],
)
def test_join_any_runs_on_the_first_taken_edge_only(
    counts: tuple[int, int], newly_taken: int, verdict: Verdict
) -> None:
    g = graph(diamond(2, "any"))
    assert node_verdict(g, "join", counts, newly_taken) is verdict


def test_settlement_redecides_a_run_from_its_terminal_nodes() -> None:
    """b1 completed and b2 was skipped before the run failed: join must now run, nothing else."""
    g = graph(diamond(2, "all"))
    settled = settle_from_states(g, {"start": "default", "b1": "success", "b2": None}, {"join", "end"})
    assert settled.run == ["join"]
    assert settled.skip == []
    assert settled.barriers["join"] == (2, 1)


def test_settlement_propagates_skips_in_topological_order() -> None:
    g = graph(diamond(2, "all"))
    settled = settle_from_states(g, {"start": "default", "b1": None, "b2": None}, {"join", "end"})
    assert settled.skip == ["join", "end"]
    assert settled.run == []


def test_topological_order_puts_parents_first() -> None:
    g = graph(diamond(3))
    order = g.topological_order
    assert order.index("start") < order.index("b2") < order.index("join") < order.index("end")
