"""The ``switch`` and ``set`` nodes through the real engine (SPEC §2), on SQLite and PostgreSQL."""

from __future__ import annotations

from typing import Any

import pytest

from flowdeck.engine.engine import Engine
from tests.support.graphs import definition, edge, end, node
from tests.support.runs import run_to_end

CASES: list[dict[str, Any]] = [
    {"handle": "exact", "equals": "vip"},
    {"handle": "listed", "in": ["gold", "silver", 3]},
    {"handle": "pattern", "matches": r"^ord-\d+$"},
    {"handle": "big", "expression": "value is number and value > ctx.input.limit"},
]

ONE_CASE: dict[str, Any] = {"value": "{{ ctx.input.kind }}", "cases": [{"handle": "a", "equals": "a"}]}


def switch_graph(cases: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """start -> route (switch) -> one step per case and default -> a join end (``any``) naming the branch."""
    cases = cases or CASES
    handles = [c["handle"] for c in cases] + ["default"]
    nodes = [node("start", "start"), node("route", "switch", config={"value": "{{ ctx.input.kind }}", "cases": cases})]
    edges = [edge("start", "route")]
    for handle in handles:
        nodes.append(node(f"on_{handle}"))
        edges += [edge("route", f"on_{handle}", handle), edge(f"on_{handle}", "end")]
    nodes.append(end(params={"route": "{{ ctx.route }}"}, joinMode="any"))
    return definition(nodes, edges)


@pytest.mark.parametrize(
    ("kind", "taken"),
    [("vip", "exact"), ("silver", "listed"), (3, "listed"), ("ord-42", "pattern"), (99, "big"), ("other", "default")],
)
async def test_switch_takes_the_first_case_that_holds_and_skips_the_others(
    engine: Engine, tenant_id: str, kind: Any, taken: str
) -> None:
    outcome = await run_to_end(engine, tenant_id, switch_graph(), {"kind": kind, "limit": 10})
    assert outcome.run.status == "COMPLETED"
    assert outcome.run.output == {"route": {"handle": taken, "value": kind}}
    for handle in ["exact", "listed", "pattern", "big", "default"]:
        assert outcome.status_of(f"on_{handle}") == ("COMPLETED" if handle == taken else "SKIPPED"), handle
    assert outcome.status_of("end") == "COMPLETED"


async def test_equals_compares_json_values_not_their_text(engine: Engine, tenant_id: str) -> None:
    cases = [{"handle": "one", "equals": 1}, {"handle": "yes", "equals": True}]
    assert (await run_to_end(engine, tenant_id, switch_graph(cases), {"kind": "1"})).run.output["route"]["handle"] == (
        "default"
    )
    assert (await run_to_end(engine, tenant_id, switch_graph(cases), {"kind": True})).run.output["route"]["handle"] == (
        "yes"
    )
    assert (await run_to_end(engine, tenant_id, switch_graph(cases), {"kind": 1.0})).run.output["route"]["handle"] == (
        "one"
    )


async def test_skipping_after_a_switch_propagates_and_an_all_join_runs_once(engine: Engine, tenant_id: str) -> None:
    """A branch not taken is SKIPPED down to its end; the join of the two branches (``all``) runs once."""
    d = definition(
        [
            node("start", "start"),
            node("route", "switch", config=ONE_CASE),
            node("a1"),
            node("b1"),
            node("b2"),
            node("join"),
            end(params={"joined": "{{ ctx.join.node }}"}),
        ],
        [
            edge("start", "route"),
            edge("route", "a1", "a"),
            edge("route", "b1", "default"),
            edge("b1", "b2"),
            edge("a1", "join"),
            edge("b2", "join"),
            edge("join", "end"),
        ],
    )
    outcome = await run_to_end(engine, tenant_id, d, {"kind": "a"})
    assert outcome.run.status == "COMPLETED"
    statuses = [outcome.status_of(n) for n in ("a1", "b1", "b2", "join")]
    assert statuses == ["COMPLETED", "SKIPPED", "SKIPPED", "COMPLETED"]
    assert outcome.count("NODE_STARTED", "join") == 1
    assert outcome.run.output == {"joined": "join"}


async def test_a_catastrophic_regex_fails_the_node_within_its_budget(engine: Engine, tenant_id: str) -> None:
    """``a*a*a*b`` backtracks for minutes on 3,000 a's; the budget stops it and the node fails naming the case."""
    cases = [{"handle": "slow", "matches": "a*a*a*a*b"}]
    outcome = await run_to_end(engine, tenant_id, switch_graph(cases), {"kind": "a" * 3000})
    assert outcome.run.status == "FAILED"
    failed = [r for r in outcome.rows if r.event_type == "NODE_FAILED" and r.node_id == "route"]
    assert failed and "config.cases[0].matches" in str(failed[-1].payload)
    assert "took more than 0.25 s of CPU time" in str(failed[-1].payload)


async def test_an_expression_error_fails_the_node_naming_the_case(engine: Engine, tenant_id: str) -> None:
    cases = [{"handle": "x", "expression": "value.missing > 1"}]
    outcome = await run_to_end(engine, tenant_id, switch_graph(cases), {"kind": {"a": 1}})
    assert outcome.run.status == "FAILED"
    failed = [r for r in outcome.rows if r.event_type == "NODE_FAILED" and r.node_id == "route"]
    assert "config.cases[0].expression" in str(failed[-1].payload)


def set_graph(fields: list[dict[str, Any]], keep: bool = False, previous: Any = None) -> dict[str, Any]:
    """start -> prev (a step whose output is ``previous`` via ``config.output``) -> shape (set) -> end."""
    prev_config = {"output": previous} if previous is not None else {}
    return definition(
        [
            node("start", "start"),
            node("prev", config=prev_config),
            node("shape", "set", config={"fields": fields, "keepInput": keep}),
            end(params={"shaped": "{{ ctx.shape }}"}),
        ],
        [edge("start", "prev"), edge("prev", "shape"), edge("shape", "end")],
    )


async def test_set_keeps_native_types_and_builds_dotted_names(engine: Engine, tenant_id: str) -> None:
    fields = [
        {"name": "count", "value": "{{ ctx.input.items | length }}"},
        {"name": "items", "value": "{{ ctx.input.items }}"},
        {"name": "label", "value": "order-{{ ctx.input.id }}"},
        {"name": "customer.name", "value": "{{ ctx.input.who }}"},
        {"name": "customer.vip", "value": True},
        {"name": "nothing", "value": None},
    ]
    outcome = await run_to_end(engine, tenant_id, set_graph(fields), {"items": [1, 2], "id": 7, "who": "Ada"})
    assert outcome.run.status == "COMPLETED"
    assert outcome.run.output == {
        "shaped": {
            "count": 2,
            "items": [1, 2],
            "label": "order-7",
            "customer": {"name": "Ada", "vip": True},
            "nothing": None,
        }
    }


async def test_keep_input_sets_fields_on_the_previous_output(engine: Engine, tenant_id: str) -> None:
    previous = {"id": 1, "customer": {"name": "old", "city": "Oslo"}, "tags": ["a"]}
    fields = [{"name": "customer.name", "value": "{{ ctx.input.who }}"}, {"name": "tags", "value": []}]
    outcome = await run_to_end(engine, tenant_id, set_graph(fields, keep=True, previous=previous), {"who": "Ada"})
    assert outcome.run.status == "COMPLETED"
    assert outcome.run.output == {"shaped": {"id": 1, "customer": {"name": "Ada", "city": "Oslo"}, "tags": []}}
    assert outcome.nodes["prev"].output == previous  # the previous node's output is not changed


async def test_keep_input_takes_the_branch_that_ran_after_a_switch(engine: Engine, tenant_id: str) -> None:
    """Two incoming edges: the source that completed (the branch taken) is the base, the skipped one is not."""
    d = definition(
        [
            node("start", "start"),
            node("route", "switch", config=ONE_CASE),
            node("a1", config={"output": {"from": "a"}}),
            node("b1", config={"output": {"from": "b"}}),
            node("shape", "set", joinMode="any", config={"fields": [{"name": "x", "value": 1}], "keepInput": True}),
            end(params={"shaped": "{{ ctx.shape }}"}),
        ],
        [
            edge("start", "route"),
            edge("route", "a1", "a"),
            edge("route", "b1", "default"),
            edge("a1", "shape"),
            edge("b1", "shape"),
            edge("shape", "end"),
        ],
    )
    for kind, source in (("a", "a"), ("z", "b")):
        outcome = await run_to_end(engine, tenant_id, d, {"kind": kind})
        assert outcome.run.status == "COMPLETED"
        assert outcome.run.output == {"shaped": {"from": source, "x": 1}}


async def test_keep_input_on_an_output_that_is_not_an_object_fails_clearly(engine: Engine, tenant_id: str) -> None:
    outcome = await run_to_end(engine, tenant_id, set_graph([], keep=True, previous=[1, 2]))
    assert outcome.run.status == "FAILED"
    failed = [r for r in outcome.rows if r.event_type == "NODE_FAILED" and r.node_id == "shape"]
    assert "keepInput: the output of 'prev' (ctx.prev) is list, not an object" in str(failed[-1].payload)


async def test_keep_input_first_in_a_loop_body_sets_fields_on_the_item(engine: Engine, tenant_id: str) -> None:
    numbered = {"fields": [{"name": "n", "value": "{{ ctx.loop.index }}"}], "keepInput": True}
    d = definition(
        [
            node("start", "start"),
            node("each", "loop", config={"items": "{{ ctx.input.rows }}"}),
            node("shape", "set", config=numbered),
            end(params={"rows": "{{ ctx.each.items }}"}),
        ],
        [edge("start", "each"), edge("each", "shape", "loop"), edge("each", "end", "done")],
    )
    outcome = await run_to_end(engine, tenant_id, d, {"rows": [{"id": "a"}, {"id": "b"}]})
    assert outcome.run.status == "COMPLETED"
    assert outcome.run.output == {"rows": [{"id": "a", "n": 0}, {"id": "b", "n": 1}]}
