"""What a node's result costs against its run's stored-output budget (``FLOWDECK_MAX_RUN_BYTES``).

A result is charged for every copy of its output the run stores: its own NODE_COMPLETED row; once
more for each loop that collects it into its ``items`` (a body's sink, and that loop again if it is
itself a sink of an outer loop's body), counted as each item arrives, so a loop's completion is
already paid for; once more for an end node, whose output is also the run's. A loop's expansion is
charged for its items (one ``ctx.loop`` row each). The portable decision (engine/decision.py) and
PostgreSQL's one-statement steps (engine/one_statement.py) both charge ``charge_of``; the counter
and its condition are storage/run_bytes.py.
"""

from __future__ import annotations

from typing import Final

from flowdeck.domain.graph import Graph
from flowdeck.engine.outcomes import Completed, Failed
from flowdeck.storage.run_bytes import json_size

__all__ = ("BUDGET_ERROR", "budget_failure", "charge_of", "stored_copies")

BUDGET_ERROR: Final = "RunOutputBudgetExceeded"


def stored_copies(graph: Graph, node_id: str) -> int:
    """How many copies of the node's output the run stores."""
    copies = 2 if graph.node(node_id).type == "end" else 1
    current = node_id
    while (loop_id := graph.loop_of(current)) is not None and current in graph.body_sinks(loop_id):
        copies += 1
        current = loop_id
    return copies


def charge_of(graph: Graph, node_id: str, outcome: Completed) -> int:
    """The bytes a completed result adds to its run's counter."""
    if outcome.iterations is not None:
        return json_size(outcome.iterations)
    return json_size(outcome.output) * stored_copies(graph, node_id)


def budget_failure(node_id: str, charge: int, budget: int) -> Failed:
    """The failure a result past the budget turns into (retrying would only store the same bytes)."""
    message = (
        f"node '{node_id}' would store {charge:,} more bytes of output, past the run's budget of "
        f"{budget:,} bytes (FLOWDECK_MAX_RUN_BYTES); nothing of it was stored"
    )
    return Failed(BUDGET_ERROR, message, retryable=False, details={"bytes": charge, "budget": budget})
