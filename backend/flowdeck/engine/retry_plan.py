"""Partial retry, planned from the log alone (pure: no database).

A FAILED run keeps every completed output. Per scope (the top level and every loop iteration that
ran), the plan says which nodes run again (failed or interrupted ones, at their next attempt), which
nodes became ready or skippable while the run was failing, and how the join barriers and loop
counters look when recomputed from the rows. Loops that were running resume: iterations that are
done count as finished, interrupted ones continue, new ones start up to the loop's concurrency, and
a loop whose every iteration is done completes.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from flowdeck.domain.graph import Graph
from flowdeck.domain.scopes import child_scope
from flowdeck.engine.scheduling import EdgeCounts, settle_from_states
from flowdeck.handlers.loop import loop_concurrency
from flowdeck.storage.log_fold import ScopeFold, fold_scopes
from flowdeck.storage.records import LogRow

__all__ = ("LoopState", "RetryPlan", "plan_retry")

LoopState = tuple[int, int, int]
"""(item count, finished iterations, attempt) of a loop in one scope."""


@dataclass(slots=True)
class RetryPlan:
    dispatch: list[tuple[str, str, int]] = field(default_factory=list)
    """(scope, node, attempt) to dispatch."""
    skip: list[tuple[str, str]] = field(default_factory=list)
    barriers: dict[tuple[str, str], EdgeCounts] = field(default_factory=dict)
    """(node, scope) -> recomputed (resolved, taken) edge counts."""
    loop_finished: dict[tuple[str, str], int] = field(default_factory=dict)
    start_iterations: list[tuple[str, str, int]] = field(default_factory=list)
    """(loop, scope, index) of iterations to start."""
    complete_loops: list[tuple[str, str]] = field(default_factory=list)


def _owner(graph: Graph, fold: ScopeFold) -> str | None:
    """The loop whose iteration this scope is (any node that ran in it tells)."""
    for node_id in (*fold.dispatched, *fold.handles):
        return graph.loop_of(node_id)
    return None


def plan_retry(graph: Graph, rows: Sequence[LogRow], loops: Mapping[tuple[str, str], LoopState]) -> RetryPlan:
    plan = RetryPlan()
    rows = [r for r in rows if r.node_id in graph.nodes]  # retried on a newer version: removed nodes are gone
    loops = {key: state for key, state in loops.items() if key[0] in graph.nodes and graph.is_loop(key[0])}
    folds = fold_scopes(rows)
    iteration_done: dict[str, bool] = {}
    for scope, fold in folds.items():
        owner = None if scope == "" else _owner(graph, fold)
        if scope and owner is None:
            continue
        universe = (
            frozenset(n for n in graph.nodes if graph.loop_of(n) is None) if owner is None else graph.direct_body(owner)
        )
        handles = dict(fold.handles) if owner is None else {**fold.handles, owner: "loop"}
        resuming = {loop for (loop, s) in loops if s == scope and loop not in fold.handles}
        redo = [
            n
            for n in graph.topological_order
            if n in universe and n in fold.dispatched and n not in fold.handles and n not in resuming
        ]
        undecided = {n for n in universe if n not in fold.handles and n not in fold.dispatched}
        settled = settle_from_states(graph, handles, undecided)
        plan.dispatch += [(scope, n, fold.last_attempt[n] + 1) for n in redo]
        plan.dispatch += [(scope, n, 1) for n in settled.run]
        plan.skip += [(scope, n) for n in settled.skip]
        plan.barriers.update({(n, scope): c for n, c in settled.barriers.items() if n in universe})
        if owner is not None:
            terminal = set(fold.handles) | set(settled.skip)
            iteration_done[scope] = not redo and not settled.run and not resuming and universe <= terminal
    for (loop_id, scope), (count, _finished, _attempt) in loops.items():
        if loop_id in folds.get(scope, ScopeFold()).handles:
            continue  # this loop completed before the run failed
        done = sum(1 for i in range(count) if iteration_done.get(child_scope(scope, i)))
        started = sum(1 for i in range(count) if child_scope(scope, i) in folds)
        plan.loop_finished[(loop_id, scope)] = done
        wanted = min(count, done + loop_concurrency(graph.node(loop_id).config))
        plan.start_iterations += [(loop_id, scope, i) for i in range(started, wanted)]
        if done == count:
            plan.complete_loops.append((loop_id, scope))
    return plan
