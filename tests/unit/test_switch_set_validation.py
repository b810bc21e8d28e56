"""Validation of the ``switch`` and ``set`` node configs and handles (SPEC §1, §2): each problem names its path."""

from __future__ import annotations

from typing import Any

import pytest

from flowdeck.domain.problems import Problem
from flowdeck.handlers.registry import HandlerRegistry, builtin_handlers
from flowdeck.validation.definition import validate_definition
from flowdeck.validation.inputs import workflow_inputs

REGISTRY = HandlerRegistry(builtin_handlers())


def graph(middle: dict[str, Any], handles: list[str]) -> dict[str, Any]:
    """start -> middle -> end, one edge per handle."""
    edges = [{"id": "e0", "source": "start", "target": "mid"}]
    edges += [{"id": f"e-{h}", "source": "mid", "target": "end", "sourceHandle": h} for h in handles]
    return {
        "nodes": [
            {"id": "start", "type": "start"},
            {"id": "mid", **middle},
            {"id": "end", "type": "end", "joinMode": "any", "config": {"outputParameters": {"r": "{{ ctx.mid }}"}}},
        ],
        "edges": edges,
    }


def switch(cases: Any, value: Any = "{{ ctx.input.kind }}") -> dict[str, Any]:
    return {"type": "switch", "config": {"value": value, "cases": cases}}


def errors(raw: dict[str, Any]) -> list[Problem]:
    return [p for p in validate_definition(raw, REGISTRY) if p.severity == "error"]


def paths(raw: dict[str, Any]) -> set[str | None]:
    return {p.path for p in errors(raw)}


def test_a_switch_with_every_matcher_and_its_handles_is_valid() -> None:
    cases = [
        {"handle": "a", "equals": "x"},
        {"handle": "b", "in": [1, 2]},
        {"handle": "c", "matches": "^ord-[0-9]+$"},
        {"handle": "d", "expression": "value > ctx.input.limit"},
    ]
    assert errors(graph(switch(cases), ["a", "b", "c", "d", "default"])) == []


def test_a_switch_edge_from_a_handle_no_case_declares_is_refused() -> None:
    problems = errors(graph(switch([{"handle": "a", "equals": 1}]), ["a", "nope"]))
    assert [p.code for p in problems] == ["invalid_source_handle"]
    assert "'nope'" in problems[0].message and "'a', 'default'" in problems[0].message


@pytest.mark.parametrize(
    ("cases", "path"),
    [
        ([], "config.cases"),
        ([{"handle": "default", "equals": 1}], "config.cases[0].handle"),
        ([{"handle": "a", "equals": 1}, {"handle": "a", "equals": 2}], "config.cases[1].handle"),
        ([{"handle": "bad id", "equals": 1}], "config.cases[0].handle"),
        ([{"handle": "a"}], "config.cases[0]"),
        ([{"handle": "a", "equals": 1, "matches": "x"}], "config.cases[0]"),
        ([{"handle": "a", "in": "abc"}], "config.cases[0].in"),
        ([{"handle": "a", "matches": "(unclosed"}], "config.cases[0].matches"),
        ([{"handle": "a", "matches": "(a+)+$"}], "config.cases[0].matches"),
        ([{"handle": "a", "matches": "x" * 1001}], "config.cases[0].matches"),
        ([{"handle": "a", "expression": "value >"}], "config.cases[0].expression"),
        ([{"handle": "a", "expression": "other > 1"}], "config.cases[0].expression"),
        ([{"handle": "a", "equals": 1, "when": 2}], "config.cases[0].when"),
    ],
)
def test_a_bad_switch_case_is_named_by_its_path(cases: list[Any], path: str) -> None:
    raw = graph(switch(cases), ["default"])
    assert path in paths(raw), errors(raw)


def test_a_catastrophic_regex_says_why() -> None:
    (problem,) = errors(graph(switch([{"handle": "a", "matches": "(a+)+$"}]), ["default"]))
    assert "exponential" in problem.message and problem.node_id == "mid"


def test_switch_expressions_count_as_references() -> None:
    raw = graph(switch([{"handle": "a", "expression": "value == ctx.ghost.x and ctx.input.limit"}]), ["default"])
    warnings = [p for p in validate_definition(raw, REGISTRY) if p.code == "unknown_variable"]
    assert [p.path for p in warnings] == ["config.cases[0].expression"]
    assert "limit" in workflow_inputs(raw) and "kind" in workflow_inputs(raw)


def set_node(fields: Any, keep: Any = False) -> dict[str, Any]:
    return {"type": "set", "config": {"fields": fields, "keepInput": keep}}


def test_a_set_node_with_dotted_names_is_valid() -> None:
    fields = [{"name": "customer.name", "value": "{{ ctx.input.who }}"}, {"name": "total", "value": 3}]
    assert errors(graph(set_node(fields, True), ["success"])) == []


@pytest.mark.parametrize(
    ("fields", "keep", "path"),
    [
        ("x", False, "config.fields"),
        ([{"name": "a"}], False, "config.fields[0].value"),
        ([{"name": "", "value": 1}], False, "config.fields[0].name"),
        ([{"name": "a..b", "value": 1}], False, "config.fields[0].name"),
        ([{"name": "{{ x }}", "value": 1}], False, "config.fields[0].name"),
        ([{"name": "a", "value": 1}, {"name": "a", "value": 2}], False, "config.fields[1].name"),
        ([{"name": "a", "value": "{{ ctx. }}"}], False, "config.fields[0].value"),
        ([], "yes", "config.keepInput"),
    ],
)
def test_a_bad_set_field_is_named_by_its_path(fields: Any, keep: Any, path: str) -> None:
    raw = graph(set_node(fields, keep), ["success"])
    assert path in paths(raw), errors(raw)
