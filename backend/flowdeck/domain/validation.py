"""Validate a workflow definition as raw JSON (SPEC §1, §2): every problem at once, never an exception.

The input comes straight from a request and may be hostile: any value can have any type. Problems name
the node, edge or field at fault. ``path`` is relative to the node or edge named by ``nodeId``/``edgeId``
(``config.branches[0].id``, ``retry.maxAttempts``) and absolute otherwise (``nodes[3].id``,
``options.timeoutSeconds``). A definition without errors always converts with ``parse_definition``.

Depth is the number of edges on the longest path. A definition far over the size limits (more than
``ANALYSIS_FACTOR`` times) is not analysed beyond those limits, so validation stays cheap.
"""

from __future__ import annotations

import logging
import math
import re
from collections import deque
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

import msgspec

from flowdeck.domain.definition import DEFAULT_RUN_TIMEOUT_SECONDS, parse_definition
from flowdeck.domain.notes import note_problems
from flowdeck.domain.problems import Problem, Severity
from flowdeck.domain.schedules import schedule_problems
from flowdeck.handlers.base import ConfigIssue, NodeHandler
from flowdeck.handlers.registry import HandlerRegistry
from flowdeck.sandbox.templates import nested_strings, referenced_variables, template_issues

__all__ = (
    "MAX_DEFINITION_BYTES",
    "MAX_DEPTH",
    "MAX_EDGES",
    "MAX_NODES",
    "PROBLEM_CODES",
    "validate_definition",
)

_log = logging.getLogger(__name__)

MAX_NODES: Final = 500
MAX_EDGES: Final = 2000
MAX_DEPTH: Final = 100
MAX_DEFINITION_BYTES: Final = 1024 * 1024
ANALYSIS_FACTOR: Final = 4
MAX_CYCLES_REPORTED: Final = 50
MAX_LABEL_CHARS: Final = 500
MAX_TITLE_CHARS: Final = 200  # the workflows.title column, and what the API accepts
MAX_RETRY_ATTEMPTS: Final = 10

PROBLEM_CODES: Final = (
    "invalid_definition",
    "invalid_field",
    "missing_start",
    "multiple_starts",
    "missing_end",
    "duplicate_node_id",
    "duplicate_edge_id",
    "unknown_node_type",
    "edge_missing_node",
    "invalid_source_handle",
    "invalid_config",
    "cycle",
    "unreachable_node",
    "loop_body",
    "too_many_nodes",
    "too_many_edges",
    "too_deep",
    "too_large",
    "duplicate_output_variable",
    "unknown_variable",
    "unused_output",
    "invalid_note",
)

_NODE_ID = re.compile(r"[A-Za-z0-9_-]{1,64}")
_EDGE_ID = re.compile(r"[A-Za-z0-9_.:-]{1,128}")
_VARIABLE = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,63}")
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_RESERVED_VARIABLES: Final = frozenset({"input", "output", "loop"})
_ALWAYS_KNOWN: Final = frozenset({"input"})
_JOIN_MODES: Final = ("all", "any")
_ERROR_HANDLING: Final = ("continue", "fail_workflow")
_RETRY_KEYS: Final = ("maxAttempts", "backoffSeconds", "maxBackoffSeconds")
_LOOP_TYPE = "loop"
_LOOP_HANDLE = "loop"


def _show(value: Any, limit: int = 40) -> str:
    """A short, safe rendering of a (possibly hostile) value for a message: 'text', 12, null, true, [...]."""
    if value is None or isinstance(value, bool):
        return "null" if value is None else str(value).lower()
    text = value if isinstance(value, str) else repr(value)
    text = text.encode("unicode_escape", "backslashreplace").decode("ascii")
    if len(text) > limit:
        text = text[:limit] + "…"
    return f"'{text}'" if isinstance(value, str) else text


def _handles(handles: tuple[str, ...]) -> str:
    return ", ".join(f"'{handle}'" for handle in handles)


def _is_number(value: Any) -> bool:
    """A finite JSON number (not a bool; ints within 64 bits, which every consumer can convert)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return False
    return math.isfinite(value) if isinstance(value, float) else abs(value) < 2**63


def _type_name(value: Any) -> str:
    names = {dict: "an object", list: "a list", str: "a string", bool: "a boolean", type(None): "null"}
    return names.get(type(value), "a number" if _is_number(value) else type(value).__name__)


@dataclass(slots=True)
class _Node:
    index: int
    id: str
    type: str | None
    handler: NodeHandler | None
    config: dict[str, Any]
    variable: str
    explicit_variable: bool


@dataclass(frozen=True, slots=True)
class _Edge:
    id: str | None
    source: str
    target: str
    handle: str | None
    where: str  # how messages name the edge


@dataclass(slots=True)
class _Graph:
    nodes: dict[str, _Node] = field(default_factory=dict)
    edges: list[_Edge] = field(default_factory=list)
    outgoing: dict[str, list[_Edge]] = field(default_factory=dict)
    incoming: dict[str, list[_Edge]] = field(default_factory=dict)

    def add_edge(self, edge: _Edge) -> None:
        self.edges.append(edge)
        self.outgoing[edge.source].append(edge)
        self.incoming[edge.target].append(edge)


class _Validator:
    def __init__(self, registry: HandlerRegistry) -> None:
        self.registry = registry
        self.default_handles = registry.default_handles()
        self.problems: list[Problem] = []
        self.run_timeout = DEFAULT_RUN_TIMEOUT_SECONDS

    # --------------------------------------------------------------------------------- reporting

    def add(
        self,
        code: str,
        message: str,
        *,
        node_id: str | None = None,
        edge_id: str | None = None,
        path: str | None = None,
        severity: Severity = "error",
    ) -> None:
        self.problems.append(Problem(code, message, severity, node_id, edge_id, path))

    def bad_field(
        self,
        where: str,
        path: str,
        expected: str,
        value: Any,
        *,
        node_id: str | None = None,
        edge_id: str | None = None,
    ) -> None:
        message = f"{where}: {path} must be {expected}, not {_show(value)}"
        self.add("invalid_field", message, node_id=node_id, edge_id=edge_id, path=path)

    # ------------------------------------------------------------------------------ the definition

    def run(self, raw: Any, raw_size: int | None) -> None:
        if raw_size is not None and raw_size > MAX_DEFINITION_BYTES:
            self.add("too_large", f"the definition is {raw_size:,} bytes; the limit is {MAX_DEFINITION_BYTES:,}")
        if not isinstance(raw, dict):
            self.add("invalid_definition", f"a workflow definition must be a JSON object, not {_type_name(raw)}")
            return
        self.check_top_level(raw)
        nodes_raw, edges_raw = raw.get("nodes"), raw.get("edges", [])
        if not isinstance(nodes_raw, list):
            self.add("invalid_definition", f"'nodes' must be a list of nodes, not {_type_name(nodes_raw)}")
            return
        if not isinstance(edges_raw, list):
            self.add("invalid_definition", f"'edges' must be a list of edges, not {_type_name(edges_raw)}")
            edges_raw = []
        if not self.check_counts(nodes_raw, edges_raw):
            return
        graph = self.collect_nodes(nodes_raw)
        self.collect_edges(edges_raw, graph)
        _GraphChecks(self, graph).run()
        if not any(p.severity == "error" for p in self.problems):
            self.check_parses(raw)

    def check_top_level(self, raw: dict[str, Any]) -> None:
        title = raw.get("title", "")
        if not isinstance(title, str) or len(title) > MAX_TITLE_CHARS:
            self.bad_field("the workflow", "title", f"a string of at most {MAX_TITLE_CHARS} characters", title)
        description = raw.get("description")
        if description is not None and not isinstance(description, str):
            self.bad_field("the workflow", "description", "a string", description)
        self.problems.extend(note_problems(raw.get("notes")))
        options = raw.get("options", {})
        if not isinstance(options, dict):
            self.bad_field("the workflow", "options", "an object", options)
            return
        timeout = options.get("timeoutSeconds", DEFAULT_RUN_TIMEOUT_SECONDS)
        if _is_number(timeout) and timeout > 0:
            self.run_timeout = float(timeout)
        else:
            self.bad_field("the workflow", "options.timeoutSeconds", "a number above 0", timeout)
        sla = options.get("slaSeconds")
        if sla is not None and not (_is_number(sla) and sla > 0):
            self.bad_field("the workflow", "options.slaSeconds", "a number above 0", sla)
        schedules = options.get("schedules", [])
        if not isinstance(schedules, list) or not all(isinstance(s, dict) for s in schedules):
            self.bad_field("the workflow", "options.schedules", "a list of objects", schedules)
        else:
            self.problems.extend(schedule_problems(schedules))

    def check_counts(self, nodes_raw: list[Any], edges_raw: list[Any]) -> bool:
        """Report the size limits; ``False`` when the definition is too big to analyse further."""
        if len(nodes_raw) > MAX_NODES:
            self.add("too_many_nodes", f"the workflow has {len(nodes_raw):,} nodes; the limit is {MAX_NODES}")
        if len(edges_raw) > MAX_EDGES:
            self.add("too_many_edges", f"the workflow has {len(edges_raw):,} edges; the limit is {MAX_EDGES}")
        return len(nodes_raw) <= ANALYSIS_FACTOR * MAX_NODES and len(edges_raw) <= ANALYSIS_FACTOR * MAX_EDGES

    def check_parses(self, raw: dict[str, Any]) -> None:
        """Safety net: what validation accepts must convert into the typed structs."""
        try:
            parse_definition(raw)
        except msgspec.ValidationError as exc:
            self.add("invalid_definition", f"the definition does not fit the workflow schema: {exc}")

    # ------------------------------------------------------------------------------------- nodes

    def collect_nodes(self, nodes_raw: list[Any]) -> _Graph:
        graph = _Graph()
        first_index: dict[str, int] = {}
        for index, raw in enumerate(nodes_raw):
            node = self.check_node(index, raw)
            if node is None:
                continue
            if node.id in first_index:
                self.add(
                    "duplicate_node_id",
                    f"node id '{node.id}' is used by nodes[{first_index[node.id]}] and nodes[{index}]",
                    node_id=node.id,
                    path=f"nodes[{index}].id",
                )
                continue
            first_index[node.id] = index
            graph.nodes[node.id] = node
            graph.outgoing[node.id] = []
            graph.incoming[node.id] = []
        return graph

    def check_node(self, index: int, raw: Any) -> _Node | None:
        if not isinstance(raw, dict):
            self.add(
                "invalid_field", f"nodes[{index}] must be an object, not {_type_name(raw)}", path=f"nodes[{index}]"
            )
            return None
        node_id = raw.get("id")
        if not isinstance(node_id, str) or not _NODE_ID.fullmatch(node_id):
            self.add(
                "invalid_field",
                f"nodes[{index}]: id must be 1-64 characters of A-Z a-z 0-9 _ -, not {_show(node_id)}",
                path=f"nodes[{index}].id",
            )
            return None
        where = f"node '{node_id}'"
        handler, node_type = self.check_type(where, node_id, raw.get("type"))
        config = raw.get("config", {})
        if not isinstance(config, dict):
            self.bad_field(where, "config", "an object", config, node_id=node_id)
            config = None
        self.check_node_fields(where, node_id, raw)
        variable, explicit = self.check_variable(where, node_id, raw)
        node = _Node(index, node_id, node_type, handler, config or {}, variable, explicit)
        if handler is not None and config is not None:
            self.check_config(where, node)
        return node

    def check_type(self, where: str, node_id: str, node_type: Any) -> tuple[NodeHandler | None, str | None]:
        if not isinstance(node_type, str):
            self.bad_field(where, "type", "a string", node_type, node_id=node_id)
            return None, None
        handler = self.registry.get(node_type)
        if handler is None:
            known = ", ".join(self.registry.types())
            message = f"{where}: unknown node type {_show(node_type)}; known types: {known}"
            self.add("unknown_node_type", message, node_id=node_id, path="type")
        return handler, node_type

    def check_node_fields(self, where: str, node_id: str, raw: dict[str, Any]) -> None:
        label = raw.get("label")
        if label is not None and not (isinstance(label, str) and len(label) <= MAX_LABEL_CHARS):
            self.bad_field(where, "label", f"a string of at most {MAX_LABEL_CHARS} characters", label, node_id=node_id)
        position = raw.get("position")
        if position is not None and not (
            isinstance(position, dict) and _is_number(position.get("x", 0)) and _is_number(position.get("y", 0))
        ):
            self.bad_field(where, "position", "an object {x, y} of numbers", position, node_id=node_id)
        timeout = raw.get("timeoutSeconds")
        if timeout is not None and not (_is_number(timeout) and 0 < timeout <= self.run_timeout):
            expected = f"a number above 0 and at most options.timeoutSeconds ({self.run_timeout:g})"
            self.bad_field(where, "timeoutSeconds", expected, timeout, node_id=node_id)
        join_mode = raw.get("joinMode", "all")
        if join_mode not in _JOIN_MODES:
            self.bad_field(where, "joinMode", "'all' or 'any'", join_mode, node_id=node_id)
        error_handling = raw.get("errorHandling", "continue")
        if error_handling not in _ERROR_HANDLING:
            self.bad_field(where, "errorHandling", "'continue' or 'fail_workflow'", error_handling, node_id=node_id)
        if raw.get("retry") is not None:
            self.check_retry(where, node_id, raw["retry"])

    def check_retry(self, where: str, node_id: str, retry: Any) -> None:
        if not isinstance(retry, dict):
            self.bad_field(where, "retry", "an object", retry, node_id=node_id)
            return
        for key in retry:
            if key not in _RETRY_KEYS:
                message = f"{where}: retry has an unknown field {_show(key)}; known: {', '.join(_RETRY_KEYS)}"
                self.add("invalid_field", message, node_id=node_id, path=f"retry.{_show(key)[1:-1]}")
        attempts = retry.get("maxAttempts", 3)
        if isinstance(attempts, bool) or not isinstance(attempts, int) or not 1 <= attempts <= MAX_RETRY_ATTEMPTS:
            expected = f"a whole number from 1 to {MAX_RETRY_ATTEMPTS}"
            self.bad_field(where, "retry.maxAttempts", expected, attempts, node_id=node_id)
        for key in ("backoffSeconds", "maxBackoffSeconds"):
            value = retry.get(key, 0)
            if not (_is_number(value) and value >= 0):
                self.bad_field(where, f"retry.{key}", "a number of at least 0", value, node_id=node_id)

    def check_variable(self, where: str, node_id: str, raw: dict[str, Any]) -> tuple[str, bool]:
        variable = raw.get("outputVariable")
        if variable is None:
            if node_id in _RESERVED_VARIABLES and raw.get("type") != "end":
                message = f"{where}: the id '{node_id}' would overwrite ctx.{node_id}; set another outputVariable"
                self.add("invalid_field", message, node_id=node_id, path="id")
            return node_id, False
        if not isinstance(variable, str) or not _VARIABLE.fullmatch(variable):
            expected = "an identifier (a letter or _, then letters, digits or _; at most 64)"
            self.bad_field(where, "outputVariable", expected, variable, node_id=node_id)
            return node_id, False
        if variable in _RESERVED_VARIABLES:
            reserved = ", ".join(sorted(_RESERVED_VARIABLES))
            self.add(
                "invalid_field",
                f"{where}: outputVariable '{variable}' is reserved ({reserved})",
                node_id=node_id,
                path="outputVariable",
            )
        return variable, True

    def check_config(self, where: str, node: _Node) -> None:
        assert node.handler is not None
        try:
            issues = list(node.handler.config_issues(node.config))
        except Exception as exc:  # noqa: BLE001 (a handler must not take validation down with it; logged)
            _log.exception("config_issues of %s failed", node.type)
            issues = [ConfigIssue("config", f"the config could not be checked ({type(exc).__name__})")]
        for name in node.handler.template_fields:
            if name in node.config:
                issues.extend(template_issues(node.config[name], f"config.{name}"))
        for issue in dict.fromkeys(issues):
            self.add("invalid_config", f"{where}: {issue.path}: {issue.message}", node_id=node.id, path=issue.path)

    # ------------------------------------------------------------------------------------- edges

    def collect_edges(self, edges_raw: list[Any], graph: _Graph) -> None:
        first_index: dict[str, int] = {}
        for index, raw in enumerate(edges_raw):
            if not isinstance(raw, dict):
                message = f"edges[{index}] must be an object, not {_type_name(raw)}"
                self.add("invalid_field", message, path=f"edges[{index}]")
                continue
            edge_id = self.check_edge_id(index, raw.get("id"))
            if edge_id is not None and edge_id in first_index:
                message = f"edge id '{edge_id}' is used by edges[{first_index[edge_id]}] and edges[{index}]"
                self.add("duplicate_edge_id", message, edge_id=edge_id, path=f"edges[{index}].id")
            elif edge_id is not None:
                first_index[edge_id] = index
            edge = self.check_edge(index, edge_id, raw, graph)
            if edge is not None and self.check_handle(edge, graph.nodes[edge.source]):
                graph.add_edge(edge)

    def check_edge_id(self, index: int, edge_id: Any) -> str | None:
        if isinstance(edge_id, str) and _EDGE_ID.fullmatch(edge_id):
            return edge_id
        message = f"edges[{index}]: id must be 1-128 characters of A-Z a-z 0-9 _ - . :, not {_show(edge_id)}"
        self.add("invalid_field", message, path=f"edges[{index}].id")
        return None

    def check_edge(self, index: int, edge_id: str | None, raw: dict[str, Any], graph: _Graph) -> _Edge | None:
        where = f"edge '{edge_id}'" if edge_id else f"edges[{index}]"
        source, target = (self.check_edge_end(where, edge_id, index, raw, key, graph) for key in ("source", "target"))
        handle = raw.get("sourceHandle")
        if handle is not None and not isinstance(handle, str):
            self.bad_field(where, "sourceHandle", "a string", handle, edge_id=edge_id)
            return None
        if source is None or target is None:
            return None
        return _Edge(edge_id, source, target, handle, where)

    def check_edge_end(
        self, where: str, edge_id: str | None, index: int, raw: dict[str, Any], key: str, graph: _Graph
    ) -> str | None:
        value = raw.get(key)
        path = key if edge_id else f"edges[{index}].{key}"
        if not isinstance(value, str):
            self.add(
                "invalid_field", f"{where}: {key} must be a node id, not {_show(value)}", edge_id=edge_id, path=path
            )
            return None
        if value not in graph.nodes:
            message = f"{where}: {key} {_show(value)} is not a node of this workflow"
            self.add("edge_missing_node", message, edge_id=edge_id, path=path)
            return None
        return value

    def check_handle(self, edge: _Edge, source: _Node) -> bool:
        """Is the edge's ``sourceHandle`` (or the type's first handle) one the source node has?"""
        if source.handler is None:
            return True  # unknown type: already reported; keep the edge for the graph checks
        try:
            handles = tuple(source.handler.output_handles(source.config))
        except Exception:  # noqa: BLE001 (a handler must not take validation down with it; logged)
            _log.exception("output_handles of %s failed", source.type)
            return True
        handle = edge.handle if edge.handle is not None else self.default_handles.get(source.type or "")
        if handle in handles:
            return True
        if not handles:
            message = f"{edge.where}: node '{source.id}' ({source.type}) has no output handles: no edge may leave it"
        elif edge.handle is None:
            message = f"{edge.where} needs a sourceHandle: node '{source.id}' ({source.type}) has {_handles(handles)}"
        else:
            message = (
                f"{edge.where}: node '{source.id}' ({source.type}) has no output handle {_show(edge.handle)}; "
                f"valid handles: {_handles(handles)}"
            )
        self.add("invalid_source_handle", message, edge_id=edge.id, node_id=source.id, path="sourceHandle")
        return False


class _GraphChecks:
    """Checks over the indexed graph: start/end, cycles, reachability, depth, loop bodies, variables."""

    def __init__(self, validator: _Validator, graph: _Graph) -> None:
        self.v = validator
        self.graph = graph
        self.order = self.topological_order()

    def handle_of(self, edge: _Edge) -> str | None:
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
        _VariableChecks(self, bodies).run()

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


def _find_cycles(graph: _Graph) -> list[tuple[list[str], str | None]]:
    """Each distinct cycle once (one per DFS back edge, rotations merged), as ``[a, b, a]`` + closing edge id.

    Iterative: a 500-deep chain must not hit the recursion limit.
    """
    done: set[str] = set()
    found: dict[tuple[str, ...], tuple[list[str], str | None]] = {}
    for root in graph.nodes:
        if root in done:
            continue
        path, position = [root], {root: 0}
        stack: list[tuple[str, Iterator[_Edge]]] = [(root, iter(graph.outgoing[root]))]
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


class _VariableChecks:
    """Warnings about ``outputVariable``: duplicates, references nobody upstream provides, outputs nobody reads."""

    def __init__(self, checks: _GraphChecks, bodies: Mapping[str, set[str]]) -> None:
        self.v = checks.v
        self.graph = checks.graph
        self.order = checks.order
        self.in_loop_body = set().union(*bodies.values()) if bodies else set()

    def run(self) -> None:
        self.check_duplicates()
        references = {node.id: list(self.references(node)) for node in self.graph.nodes.values()}
        self.check_unknown(references)
        self.check_unused()

    def check_duplicates(self) -> None:
        owner: dict[str, str] = {}
        for node in self.graph.nodes.values():
            first = owner.setdefault(node.variable, node.id)
            if first != node.id:
                message = f"nodes '{first}' and '{node.id}' both write the output variable '{node.variable}'"
                self.v.add(
                    "duplicate_output_variable", message, node_id=node.id, path="outputVariable", severity="warning"
                )

    def references(self, node: _Node) -> Iterator[tuple[str, str]]:
        """(path, variable) for every ``ctx.X`` in the node's templates and condition expressions."""
        if node.handler is None:
            return
        for name in node.handler.template_fields:
            for path, text in nested_strings(node.config.get(name), f"config.{name}"):
                for variable in sorted(referenced_variables(text)):
                    yield path, variable
        branches = node.config.get("branches") if node.type == "condition" else None
        for index, branch in enumerate(branches if isinstance(branches, list) else []):
            expression = branch.get("expression") if isinstance(branch, dict) else None
            if isinstance(expression, str):
                for variable in sorted(referenced_variables(expression, expression=True)):
                    yield f"config.branches[{index}].expression", variable

    def ancestors(self) -> dict[str, int]:
        """Node id -> bitset of its ancestors (bit = node index), over the acyclic part of the graph."""
        bits = {node_id: 1 << node.index for node_id, node in self.graph.nodes.items()}
        ancestors = dict.fromkeys(self.order, 0)
        for node_id in self.order:
            for edge in self.graph.outgoing[node_id]:
                if edge.target in ancestors:
                    ancestors[edge.target] |= ancestors[node_id] | bits[node_id]
        return ancestors

    def check_unknown(self, references: dict[str, list[tuple[str, str]]]) -> None:
        providers: dict[str, int] = {}
        for node in self.graph.nodes.values():
            providers[node.variable] = providers.get(node.variable, 0) | 1 << node.index
        ancestors = self.ancestors() if any(references.values()) else {}
        for node_id, refs in references.items():
            if node_id not in ancestors:
                continue  # on a cycle: already an error
            reported: set[str] = set()
            for path, variable in refs:
                if variable in reported or self.known(node_id, variable, ancestors[node_id], providers):
                    continue
                reported.add(variable)
                message = (
                    f"node '{node_id}': {path} refers to ctx.{variable}, "
                    f"but no upstream node has the output variable '{variable}'"
                )
                self.v.add("unknown_variable", message, node_id=node_id, path=path, severity="warning")

    def known(self, node_id: str, variable: str, ancestors: int, providers: Mapping[str, int]) -> bool:
        if variable in _ALWAYS_KNOWN or (variable == "loop" and node_id in self.in_loop_body):
            return True
        return bool(providers.get(variable, 0) & ancestors)

    def check_unused(self) -> None:
        words: set[str] = set()
        for node in self.graph.nodes.values():
            for _, text in nested_strings(node.config, ""):
                words.update(_WORD.findall(text))
        for node in self.graph.nodes.values():
            if node.explicit_variable and node.variable not in words:
                message = f"node '{node.id}': nothing refers to its output variable '{node.variable}'"
                self.v.add("unused_output", message, node_id=node.id, path="outputVariable", severity="warning")


def validate_definition(raw: Any, registry: HandlerRegistry, *, raw_size: int | None = None) -> list[Problem]:
    """Every problem of a raw JSON definition (errors and warnings); never raises.

    ``raw_size`` is the size in bytes of the request body the definition came from, if known.
    """
    validator = _Validator(registry)
    try:
        validator.run(raw, raw_size)
    except Exception:  # noqa: BLE001 (never raise on hostile input: a bug is logged and reported)
        _log.exception("validating a workflow definition failed")
        validator.add("invalid_definition", "the definition could not be validated (internal error)")
    return validator.problems
