"""Validation of raw workflow definitions (SPEC §1, §2): every problem at once, never an exception."""

from __future__ import annotations

import copy
import itertools
import random
import time
from collections.abc import Mapping
from typing import Any

import pytest

from flowdeck.domain.definition import parse_definition
from flowdeck.domain.problems import Problem, has_errors
from flowdeck.handlers.base import HandlerResult, NodeHandler, NodeHelpers
from flowdeck.handlers.registry import HandlerRegistry, builtin_handlers
from flowdeck.validation.definition import validate_definition
from flowdeck.validation.limits import PROBLEM_CODES


class PythonHandler(NodeHandler):
    """Test-only stand-in for the sandboxed ``python`` type."""

    type_name = "python"
    handles = ("success", "error")

    async def execute(
        self, config: Mapping[str, Any], context: Mapping[str, Any], helpers: NodeHelpers
    ) -> HandlerResult:
        return HandlerResult(output=None, next_handle="success")


class BrokenHandler(NodeHandler):
    """A handler whose checks crash: validation must survive it."""

    type_name = "broken"
    handles = ("default",)

    def output_handles(self, config: Mapping[str, Any]) -> tuple[str, ...]:
        raise RuntimeError("boom")

    def config_issues(self, config: Mapping[str, Any]) -> list[Any]:
        raise RuntimeError("boom")

    async def execute(
        self, config: Mapping[str, Any], context: Mapping[str, Any], helpers: NodeHelpers
    ) -> HandlerResult:
        return HandlerResult(output=None, next_handle="default")


REGISTRY = HandlerRegistry([*builtin_handlers(), PythonHandler()])
NO_LOOP_REGISTRY = HandlerRegistry([*(h for h in builtin_handlers() if h.type_name != "loop"), PythonHandler()])

SPEC_EXAMPLE: dict[str, Any] = {
    "title": "Order triage",
    "description": "optional",
    "options": {"timeoutSeconds": 3600, "slaSeconds": 600},
    "nodes": [
        {"id": "start", "type": "start", "label": "Start", "position": {"x": 0, "y": 0}, "config": {}},
        {
            "id": "score",
            "type": "python",
            "label": "Score order",
            "position": {"x": 240, "y": 0},
            "outputVariable": "score",
            "config": {"code": "return {'value': len(ctx['input']['items'])}"},
            "retry": {"maxAttempts": 3, "backoffSeconds": 1.0, "maxBackoffSeconds": 60},
            "timeoutSeconds": 30,
            "errorHandling": "fail_workflow",
        },
        {
            "id": "big",
            "type": "condition",
            "position": {"x": 480, "y": 0},
            "config": {"branches": [{"id": "large", "label": "Large", "expression": "ctx.score.value > 10"}]},
        },
        {
            "id": "end",
            "type": "end",
            "position": {"x": 720, "y": 0},
            "joinMode": "any",
            "config": {"outputParameters": {"score": "{{ ctx.score.value }}"}},
        },
    ],
    "edges": [
        {"id": "e1", "source": "start", "target": "score", "sourceHandle": "default"},
        {"id": "e2", "source": "score", "target": "big", "sourceHandle": "success"},
        {"id": "e3", "source": "big", "target": "end", "sourceHandle": "large"},
        {"id": "e4", "source": "big", "target": "end", "sourceHandle": "else"},
    ],
}


def example() -> dict[str, Any]:
    return copy.deepcopy(SPEC_EXAMPLE)


def node(node_id: str, node_type: str = "python", **fields: Any) -> dict[str, Any]:
    return {"id": node_id, "type": node_type, **fields}


def edge(edge_id: str, source: str, target: str, handle: str | None = None) -> dict[str, Any]:
    raw = {"id": edge_id, "source": source, "target": target}
    return raw if handle is None else {**raw, "sourceHandle": handle}


def chain(*ids: str, handle: str = "success") -> dict[str, Any]:
    """start -> python nodes ``ids`` -> end."""
    names = ["start", *ids, "end"]
    nodes = [node("start", "start"), *(node(i, config={"code": "return 1"}) for i in ids), node("end", "end")]
    edges = [edge(f"e{i}", a, b) for i, (a, b) in enumerate(itertools.pairwise(names))]
    for item in edges[1:]:
        item["sourceHandle"] = handle
    return {"nodes": nodes, "edges": edges}


def validate(raw: Any, registry: HandlerRegistry = REGISTRY, **kwargs: Any) -> list[Problem]:
    problems = validate_definition(raw, registry, **kwargs)
    assert all(isinstance(p, Problem) for p in problems)
    assert all(p.code in PROBLEM_CODES for p in problems), [p.code for p in problems]
    return problems


def only(problems: list[Problem], code: str) -> Problem:
    found = [p for p in problems if p.code == code]
    assert len(found) == 1, (code, problems)
    return found[0]


def codes(problems: list[Problem]) -> list[str]:
    return [p.code for p in problems]


# ------------------------------------------------------------------------------------- valid input


def test_the_spec_example_is_valid() -> None:
    assert validate(example()) == []
    assert validate(example(), raw_size=10_000) == []


def test_a_definition_without_errors_parses() -> None:
    parse_definition(example())
    minimal = {"nodes": [node("start", "start"), node("end", "end")], "edges": [edge("e", "start", "end")]}
    assert not has_errors(validate(minimal))
    parse_definition(minimal)


def test_an_edge_without_source_handle_uses_the_first_handle() -> None:
    raw = chain("a")
    del raw["edges"][1]["sourceHandle"]  # a -> end from 'success', python's first handle
    assert validate(raw) == []


def test_null_optional_fields_are_accepted() -> None:
    raw = example()
    raw["nodes"][1].update(label=None, position=None, retry=None, timeoutSeconds=None)
    raw["nodes"][1]["outputVariable"] = None
    raw["options"]["slaSeconds"] = None
    assert not has_errors(validate(raw))


# ------------------------------------------------------------------------------ one test per code


@pytest.mark.parametrize("raw", [None, "x", 1, 2.5, True, [], [SPEC_EXAMPLE]])
def test_invalid_definition_not_an_object(raw: Any) -> None:
    problem = only(validate(raw), "invalid_definition")
    assert "must be a JSON object" in problem.message


@pytest.mark.parametrize(("field", "value"), [("nodes", None), ("nodes", "x"), ("nodes", {}), ("edges", "x")])
def test_invalid_definition_nodes_or_edges_not_a_list(field: str, value: Any) -> None:
    raw = example()
    if value is None:
        del raw[field]
    else:
        raw[field] = value
    problem = only(validate(raw), "invalid_definition")
    assert f"'{field}' must be a list" in problem.message


@pytest.mark.parametrize(
    ("change", "path"),
    [
        ({"outputVariable": "not an identifier"}, "outputVariable"),
        ({"outputVariable": "1abc"}, "outputVariable"),
        ({"outputVariable": 5}, "outputVariable"),
        ({"outputVariable": "input"}, "outputVariable"),
        ({"retry": {"maxAttempts": 0}}, "retry.maxAttempts"),
        ({"retry": {"maxAttempts": 11}}, "retry.maxAttempts"),
        ({"retry": {"maxAttempts": True}}, "retry.maxAttempts"),
        ({"retry": {"maxAttempts": 2.5}}, "retry.maxAttempts"),
        ({"retry": {"backoffSeconds": -1}}, "retry.backoffSeconds"),
        ({"retry": {"maxBackoffSeconds": "1"}}, "retry.maxBackoffSeconds"),
        ({"retry": {"maxAttempts": 2, "jitter": 1}}, "retry.jitter"),
        ({"retry": "3"}, "retry"),
        ({"timeoutSeconds": 0}, "timeoutSeconds"),
        ({"timeoutSeconds": 3601}, "timeoutSeconds"),
        ({"timeoutSeconds": float("nan")}, "timeoutSeconds"),
        ({"joinMode": "some"}, "joinMode"),
        ({"errorHandling": "ignore"}, "errorHandling"),
        ({"position": {"x": "0", "y": 0}}, "position"),
        ({"position": [0, 0]}, "position"),
        ({"label": 7}, "label"),
        ({"label": "x" * 501}, "label"),
        ({"config": [1]}, "config"),
        ({"config": None}, "config"),
        ({"type": 3}, "type"),
    ],
)
def test_invalid_field_on_a_node(change: dict[str, Any], path: str) -> None:
    raw = example()
    raw["nodes"][1].update(change)
    problem = only(validate(raw), "invalid_field")
    assert problem.node_id == "score"
    assert problem.path == path
    assert "node 'score'" in problem.message
    assert path.split(".")[-1] in problem.message


@pytest.mark.parametrize(("title", "valid"), [("t" * 200, True), ("t" * 201, False), (7, False)])
def test_the_title_fits_what_is_stored(title: Any, valid: bool) -> None:
    raw = {**example(), "title": title}
    if valid:
        assert validate(raw) == []
    else:
        problem = only(validate(raw), "invalid_field")
        assert problem.path == "title" and "at most 200 characters" in problem.message


@pytest.mark.parametrize("node_id", ["", "a b", "x" * 65, "a/b", "é", "a\x00", 5, None])
def test_invalid_field_node_id(node_id: Any) -> None:
    raw = example()
    raw["nodes"].append(node(node_id, "end"))
    problem = only(validate(raw), "invalid_field")
    assert problem.path == "nodes[4].id"
    assert problem.node_id is None
    assert "nodes[4]" in problem.message


def test_invalid_field_node_timeout_is_bounded_by_the_run_timeout() -> None:
    raw = example()
    raw["options"]["timeoutSeconds"] = 10
    problem = only(validate(raw), "invalid_field")
    assert (problem.node_id, problem.path) == ("score", "timeoutSeconds")
    assert "options.timeoutSeconds (10)" in problem.message


@pytest.mark.parametrize(
    ("field", "value"),
    [("title", 5), ("description", []), ("options", []), ("options", {"timeoutSeconds": -1})],
)
def test_invalid_field_at_the_top_level(field: str, value: Any) -> None:
    raw = example()
    raw[field] = value
    problem = only(validate(raw), "invalid_field")
    assert problem.path is not None
    assert problem.path.startswith(field)
    assert field in problem.message


def test_invalid_field_on_an_edge() -> None:
    raw = example()
    raw["edges"][0]["sourceHandle"] = 1
    raw["edges"].append({"id": "bad id!", "source": "score", "target": "end", "sourceHandle": "error"})
    bad = [p for p in validate(raw) if p.code == "invalid_field"]
    assert [(p.edge_id, p.path) for p in bad] == [("e1", "sourceHandle"), (None, "edges[4].id")]
    assert "edge 'e1'" in bad[0].message
    assert "edges[4]" in bad[1].message


def test_missing_start() -> None:
    raw = example()
    raw["nodes"][0]["type"] = "delay"
    raw["nodes"][0]["config"] = {"seconds": 1}
    problem = only(validate(raw), "missing_start")
    assert "start" in problem.message


def test_multiple_starts() -> None:
    raw = example()
    raw["nodes"].append(node("start2", "start"))
    raw["edges"].append(edge("e9", "start2", "end"))
    problem = only(validate(raw), "multiple_starts")
    assert problem.node_id == "start2"
    assert "'start2'" in problem.message
    assert "'start'" in problem.message


def test_missing_end() -> None:
    raw = chain("a")
    raw["nodes"][-1] = node("end", "python")
    problem = only(validate(raw), "missing_end")
    assert "end" in problem.message


def test_duplicate_node_id() -> None:
    raw = example()
    raw["nodes"].append(node("score", "end"))
    problem = only(validate(raw), "duplicate_node_id")
    assert (problem.node_id, problem.path) == ("score", "nodes[4].id")
    assert "'score'" in problem.message
    assert "nodes[1]" in problem.message


def test_duplicate_edge_id() -> None:
    raw = example()
    raw["edges"].append(edge("e2", "score", "end", "error"))
    problem = only(validate(raw), "duplicate_edge_id")
    assert (problem.edge_id, problem.path) == ("e2", "edges[4].id")
    assert "'e2'" in problem.message


def test_unknown_node_type_lists_the_known_types() -> None:
    raw = example()
    raw["nodes"][1]["type"] = "pyhton"
    problems = validate(raw)
    problem = only(problems, "unknown_node_type")
    assert problem.node_id == "score"
    assert "'pyhton'" in problem.message
    assert "condition, delay, end, loop, python, set, start, switch" in problem.message


@pytest.mark.parametrize("end", ["source", "target"])
def test_edge_missing_node(end: str) -> None:
    raw = example()
    raw["edges"][3][end] = "ghost"
    problem = only(validate(raw), "edge_missing_node")
    assert (problem.edge_id, problem.path) == ("e4", end)
    assert "'ghost'" in problem.message
    assert "edge 'e4'" in problem.message


def test_invalid_source_handle_lists_the_valid_handles() -> None:
    raw = example()
    raw["edges"][2]["sourceHandle"] = "small"
    problem = only(validate(raw), "invalid_source_handle")
    assert (problem.edge_id, problem.node_id) == ("e3", "big")
    assert "'small'" in problem.message
    assert "'large', 'else'" in problem.message


def test_invalid_source_handle_without_handle_on_a_type_with_dynamic_handles() -> None:
    raw = example()
    del raw["edges"][2]["sourceHandle"]  # a condition has no default handle
    problem = only(validate(raw), "invalid_source_handle")
    assert problem.edge_id == "e3"
    assert "needs a sourceHandle" in problem.message


def test_invalid_source_handle_from_an_end_node() -> None:
    raw = example()
    raw["nodes"].append(node("after", "end"))
    raw["edges"].append(edge("e9", "end", "after"))
    problem = only(validate(raw), "invalid_source_handle")
    assert (problem.edge_id, problem.node_id) == ("e9", "end")
    assert "no output handles" in problem.message


@pytest.mark.parametrize(
    ("target", "config", "path"),
    [
        (2, {"branches": []}, "config.branches"),
        (2, {"branches": [{"id": "else", "expression": "1"}]}, "config.branches[0].id"),
        (2, {"branches": [{"id": "large", "expression": "ctx.score.value >"}]}, "config.branches[0].expression"),
        (3, {"outputParameters": {"score": "{{ ctx.score.value "}}, "config.outputParameters.score"),
        (3, {"outputParameters": {"score": "{{ ctx.score|nofilter }}"}}, "config.outputParameters.score"),
        (3, {"outputParameters": []}, "config.outputParameters"),
    ],
)
def test_invalid_config(target: int, config: dict[str, Any], path: str) -> None:
    raw = example()
    raw["nodes"][target]["config"] = config
    problems = [p for p in validate(raw) if p.code == "invalid_config"]
    assert problems
    node_id = raw["nodes"][target]["id"]
    assert all(p.node_id == node_id for p in problems)
    assert path in [p.path for p in problems]
    assert all(f"node '{node_id}'" in p.message for p in problems)


def test_invalid_config_of_a_delay() -> None:
    raw = chain()
    raw["nodes"].insert(1, node("wait", "delay", config={"seconds": -1}))
    raw["edges"] = [edge("e1", "start", "wait"), edge("e2", "wait", "end")]
    problem = only(validate(raw), "invalid_config")
    assert (problem.node_id, problem.path) == ("wait", "config.seconds")


def test_cycle_is_named_and_reported_once() -> None:
    raw = chain("a", "b", "c")
    raw["edges"].append(edge("back", "c", "a", "error"))
    problem = only(validate(raw), "cycle")
    assert "a -> b -> c -> a" in problem.message
    assert problem.node_id == "a"
    assert problem.edge_id == "back"


def test_each_distinct_cycle_is_reported() -> None:
    raw = chain("a", "b", "c", "d")
    raw["edges"] += [edge("back1", "b", "a", "error"), edge("back2", "d", "c", "error")]
    messages = sorted(p.message for p in validate(raw) if p.code == "cycle")
    assert len(messages) == 2
    assert "a -> b -> a" in messages[0]
    assert "c -> d -> c" in messages[1]


def test_self_loop_is_a_cycle() -> None:
    raw = chain("a")
    raw["edges"].append(edge("self", "a", "a", "error"))
    problem = only(validate(raw), "cycle")
    assert "a -> a" in problem.message


def test_cycle_detection_handles_deep_graphs_without_recursion() -> None:
    ids = [f"n{i}" for i in range(498)]
    raw = chain(*ids)
    raw["edges"].append(edge("back", "n497", "n0", "error"))
    problems = validate(raw)
    cycle = only(problems, "cycle")
    assert cycle.message.startswith("cycle: n0 -> n1 -> ")
    assert cycle.message.count("->") == 498


def test_unreachable_node() -> None:
    raw = example()
    raw["nodes"].append(node("island", config={"code": "return 1"}))
    raw["edges"].append(edge("e9", "island", "end", "success"))
    problem = only(validate(raw), "unreachable_node")
    assert problem.node_id == "island"
    assert "'island'" in problem.message


def loop_definition() -> dict[str, Any]:
    """start -> each (loop) -[loop]-> body1 -> body2 ; each -[done]-> end."""
    return {
        "nodes": [
            node("start", "start"),
            node("each", "loop", config={"items": "{{ ctx.input.rows }}"}),
            node("body1", outputVariable="first", config={"code": "return ctx['loop']['item']"}),
            node("body2", "end", config={"outputParameters": {"x": "{{ ctx.loop.item }} {{ ctx.first }}"}}),
            node("end", "end", config={"outputParameters": {"all": "{{ ctx.each }}"}}),
        ],
        "edges": [
            edge("e1", "start", "each"),
            edge("e2", "each", "body1", "loop"),
            edge("e3", "body1", "body2", "success"),
            edge("e4", "each", "end", "done"),
        ],
    }


def test_a_well_formed_loop_is_valid() -> None:
    assert validate(loop_definition()) == []


def test_loop_body_fed_from_outside() -> None:
    raw = loop_definition()
    raw["edges"].append(edge("sneak", "start", "body2"))
    problem = only(validate(raw), "loop_body")
    assert (problem.node_id, problem.edge_id) == ("body2", "sneak")
    assert "'each'" in problem.message
    assert "'start' outside the body" in problem.message


def test_loop_body_fed_from_the_done_handle() -> None:
    raw = loop_definition()
    raw["edges"].append(edge("wrong", "each", "body2", "done"))
    problem = only(validate(raw), "loop_body")
    assert (problem.node_id, problem.edge_id) == ("body2", "wrong")
    assert "'done' handle" in problem.message


def test_loop_body_leaving_the_body() -> None:
    raw = loop_definition()
    raw["edges"].append(edge("out", "body1", "end", "error"))  # 'end' is also fed by the done handle
    problem = only(validate(raw), "loop_body")
    assert (problem.node_id, problem.edge_id) == ("end", "e4")
    assert "'done' handle of loop 'each'" in problem.message


def test_loop_body_edge_back_to_the_loop() -> None:
    raw = loop_definition()
    raw["edges"].append(edge("again", "body1", "each", "error"))
    problems = validate(raw)
    problem = only(problems, "loop_body")
    assert problem.edge_id == "again"
    assert "back to the loop" in problem.message
    assert "cycle" in codes(problems)


def test_loop_bodies_are_not_checked_without_a_loop_type() -> None:
    raw = loop_definition()
    raw["edges"].append(edge("sneak", "start", "body2"))
    assert "loop_body" not in codes(validate(raw, NO_LOOP_REGISTRY))


def test_too_many_nodes() -> None:
    ids = [f"n{i}" for i in range(500)]
    raw = {"nodes": [node("start", "start"), *(node(i) for i in ids), node("end", "end")], "edges": []}
    problem = only(validate(raw), "too_many_nodes")
    assert "502" in problem.message
    assert "500" in problem.message


def test_too_many_edges() -> None:
    raw = example()
    raw["edges"] += [edge(f"x{i}", "score", "big", "success") for i in range(2000)]
    problem = only(validate(raw), "too_many_edges")
    assert "2,004" in problem.message


def test_far_too_big_definitions_are_not_analysed() -> None:
    raw = {"nodes": [{"id": f"n{i}"} for i in range(5000)], "edges": []}
    started = time.perf_counter()
    assert codes(validate(raw)) == ["too_many_nodes"]
    assert time.perf_counter() - started < 0.5


def test_too_deep() -> None:
    raw = chain(*(f"n{i}" for i in range(100)))  # start + 100 + end: 101 edges
    problem = only(validate(raw), "too_deep")
    assert problem.node_id == "end"
    assert "101 edges" in problem.message
    assert not has_errors(validate(chain(*(f"n{i}" for i in range(99)))))


def test_too_large() -> None:
    problem = only(validate(example(), raw_size=2 * 1024 * 1024), "too_large")
    assert "2,097,152 bytes" in problem.message


def test_duplicate_output_variable_is_a_warning() -> None:
    raw = chain("a", "b")
    raw["nodes"][1]["outputVariable"] = "result"
    raw["nodes"][2]["outputVariable"] = "result"
    raw["nodes"][3]["config"] = {"outputParameters": {"r": "{{ ctx.result }}"}}
    problem = only(validate(raw), "duplicate_output_variable")
    assert (problem.severity, problem.node_id) == ("warning", "b")
    assert "'a'" in problem.message
    assert "'result'" in problem.message


def test_unknown_variable_is_a_warning() -> None:
    raw = example()
    raw["nodes"][3]["config"]["outputParameters"]["extra"] = "{{ ctx.scroe.value }}"
    problem = only(validate(raw), "unknown_variable")
    assert (problem.severity, problem.node_id, problem.path) == (
        "warning",
        "end",
        "config.outputParameters.extra",
    )
    assert "ctx.scroe" in problem.message
    assert not has_errors(validate(raw))


def test_unknown_variable_in_a_condition_expression() -> None:
    raw = example()
    raw["nodes"][2]["config"]["branches"][0]["expression"] = "ctx.nope > 1"
    problem = only(validate(raw), "unknown_variable")
    assert (problem.node_id, problem.path) == ("big", "config.branches[0].expression")


def test_unknown_variable_from_a_sibling_branch() -> None:
    raw = {
        "nodes": [
            node("start", "start"),
            node("a", outputVariable="fromA", config={"code": "return 1"}),
            node("b", "delay", config={"seconds": "{{ ctx.fromA }}"}),
            node("end", "end", config={"outputParameters": {"a": "{{ ctx.fromA }}"}}),
        ],
        "edges": [edge("e1", "start", "a"), edge("e2", "start", "b"), edge("e3", "a", "end"), edge("e4", "b", "end")],
    }
    problem = only(validate(raw), "unknown_variable")
    assert (problem.node_id, problem.path) == ("b", "config.seconds")


def test_input_upstream_outputs_and_loop_are_known() -> None:
    raw = loop_definition()
    raw["nodes"][1]["config"]["items"] = "{{ ctx.input.rows }}"
    assert "unknown_variable" not in codes(validate(raw))
    raw["nodes"][4]["config"]["outputParameters"]["i"] = "{{ ctx.loop.index }}"  # outside the body
    problem = only(validate(raw), "unknown_variable")
    assert (problem.node_id, "ctx.loop" in problem.message) == ("end", True)


def test_unused_output_is_a_warning() -> None:
    raw = example()
    raw["nodes"][2]["config"]["branches"][0]["expression"] = "ctx.input.items|length > 10"
    raw["nodes"][3]["config"]["outputParameters"] = {}
    problem = only(validate(raw), "unused_output")
    assert (problem.severity, problem.node_id, problem.path) == ("warning", "score", "outputVariable")
    assert "'score'" in problem.message


def test_implicit_or_code_referenced_outputs_are_not_unused() -> None:
    raw = chain("a", "b")
    raw["nodes"][1]["outputVariable"] = "rows"
    raw["nodes"][2]["config"] = {"code": "return len(ctx['rows'])"}
    assert validate(raw) == []


# ---------------------------------------------------------------------------- all problems at once


def test_several_problems_are_reported_together() -> None:
    raw = example()
    raw["nodes"][1]["retry"]["maxAttempts"] = 99
    raw["nodes"][2]["config"]["branches"][0]["expression"] = "ctx.score.value >"
    raw["nodes"].append(node("score", "end"))
    raw["nodes"].append(node("x", "mystery"))
    raw["edges"].append(edge("e1", "big", "ghost", "large"))
    raw["edges"].append(edge("e8", "end", "score"))
    problems = validate(raw, raw_size=5_000_000)
    assert set(codes(problems)) >= {
        "too_large",
        "invalid_field",
        "invalid_config",
        "duplicate_node_id",
        "unknown_node_type",
        "duplicate_edge_id",
        "edge_missing_node",
        "invalid_source_handle",
        "unreachable_node",
    }


# --------------------------------------------------------------------------------------- hostile input

HOSTILE: list[Any] = [
    None,
    "",
    "\x00",
    "nodes",
    0,
    -1,
    float("inf"),
    [],
    [None],
    {},
    {"nodes": None},
    {"nodes": [None, 1, "x", [], {}]},
    {"nodes": [{"id": {"a": 1}, "type": ["start"]}]},
    {"nodes": [{"id": "a", "type": "start", "config": "x", "retry": [], "position": "x", "label": {}}]},
    {"nodes": [{"id": "a\x00b", "type": "start\x00"}], "edges": [{"id": "\x00", "source": None, "target": 5}]},
    {"nodes": [{"id": "a", "type": "condition", "config": {"branches": [None, 1, {"id": ["x"], "expression": 5}]}}]},
    {"nodes": [{"id": "a", "type": "end", "config": {"outputParameters": {"": "{{ ctx.__class__ }}"}}}]},
    {"nodes": [{"id": "a", "type": "delay", "config": {"seconds": "{{ " + "(" * 5000 + " }}"}}]},
    {"nodes": [{"id": "a", "type": "loop", "config": {"items": ["{{ ctx.x", {"k": None}]}}], "edges": [1, None]},
    {"nodes": [{"id": "x" * 1_000_000, "type": "y" * 1_000_000}]},
    {"nodes": [], "edges": [{"id": "e", "source": "a", "target": "b", "sourceHandle": {"x": 1}}]},
    {"nodes": [{"id": "s", "type": "start"}], "edges": [{"id": "e", "source": "s", "target": "s", "sourceHandle": []}]},
    {"title": None, "description": 5, "options": {"timeoutSeconds": "1", "slaSeconds": -1, "schedules": [1]}},
    {"options": {"timeoutSeconds": True}, "nodes": [{"id": "a", "type": "python", "timeoutSeconds": True}]},
    {"nodes": [{"id": "a", "type": "python", "retry": {"maxAttempts": 10**100, "backoffSeconds": float("nan")}}]},
    {"nodes": [{"id": "a", "type": "start", "position": {"x": 10**400, "y": -(10**400)}, "timeoutSeconds": 10**400}]},
    {"options": {"timeoutSeconds": 10**400, "slaSeconds": float("-inf")}, "nodes": [{"id": "a", "type": "end"}]},
]


@pytest.mark.parametrize("raw", HOSTILE, ids=range(len(HOSTILE)))
def test_hostile_input_never_raises(raw: Any) -> None:
    problems = validate(raw)
    assert has_errors(problems)
    for problem in problems:
        assert len(problem.message) < 2000
        assert "internal error" not in problem.message
        problem.to_json()


def test_deeply_nested_config_never_raises() -> None:
    config: Any = "{{ ctx.a"
    for _ in range(20_000):
        config = {"k": [config]}
    raw = example()
    raw["nodes"][3]["config"] = {"outputParameters": config}
    assert "invalid_config" in codes(validate(raw))


def test_random_garbage_never_raises() -> None:
    rng = random.Random(20240601)
    atoms: list[Any] = [None, True, 0, -5, 1.5, "", "start", "end", "python", "e1", "score", "\x00", [], {}]
    keys = ["id", "type", "source", "target", "sourceHandle", "config", "retry", "nodes", "edges", "branches"]

    def garbage(depth: int) -> Any:
        roll = rng.random()
        if depth > 3 or roll < 0.4:
            return rng.choice(atoms)
        if roll < 0.7:
            return [garbage(depth + 1) for _ in range(rng.randrange(4))]
        return {rng.choice(keys): garbage(depth + 1) for _ in range(rng.randrange(5))}

    for _ in range(1000):
        raw = example()
        target = rng.choice([raw, *raw["nodes"], *raw["edges"]])
        target[rng.choice(keys)] = garbage(0)
        for problem in validate(raw):
            # neither a crash nor a gap that only the final schema check caught
            assert "internal error" not in problem.message
            assert "does not fit the workflow schema" not in problem.message, problem.message


def test_a_crashing_handler_does_not_break_validation(caplog: pytest.LogCaptureFixture) -> None:
    registry = HandlerRegistry([*builtin_handlers(), BrokenHandler()])
    raw = {
        "nodes": [node("start", "start"), node("b", "broken"), node("end", "end")],
        "edges": [edge("e1", "start", "b"), edge("e2", "b", "end")],
    }
    problem = only(validate(raw, registry), "invalid_config")
    assert problem.node_id == "b"
    assert "could not be checked" in problem.message


# --------------------------------------------------------------------------------------- performance


def big_chain() -> dict[str, Any]:
    ids = [f"n{i}" for i in range(498)]
    raw = chain(*ids)
    for index, item in enumerate(raw["nodes"][1:-1]):
        item["outputVariable"] = f"v{index}"
        item["config"] = {"code": f"return ctx['v{index - 1}']"}
    return raw


def big_fan_out() -> dict[str, Any]:
    ids = [f"n{i}" for i in range(498)]
    nodes = [node("start", "start"), *(node(i, config={"code": "return 1"}) for i in ids), node("end", "end")]
    edges = [edge(f"a{i}", "start", n) for i, n in enumerate(ids)]
    edges += [edge(f"b{i}", n, "end", "success") for i, n in enumerate(ids)]
    return {"nodes": nodes, "edges": edges}


@pytest.mark.parametrize("make", [big_chain, big_fan_out])
def test_big_graphs_validate_fast(make: Any) -> None:
    raw = make()
    validate(raw)  # warm caches
    started = time.perf_counter()
    problems = validate(raw)
    elapsed = time.perf_counter() - started
    assert elapsed < 0.25, f"{elapsed * 1000:.1f} ms"  # measured ~6-8 ms; generous for a shared CI machine
    assert set(codes(problems)) <= {"too_deep", "unused_output"}
