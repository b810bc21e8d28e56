"""The definition's fields: the top level, every node (type, config, retry, variable) and every edge."""

from __future__ import annotations

import logging
import re
from typing import Any, Final

import msgspec

from flowdeck.domain.definition import DEFAULT_RUN_TIMEOUT_SECONDS, parse_definition
from flowdeck.domain.errors import ConfigIssue
from flowdeck.domain.flow_control import flow_control_problems
from flowdeck.domain.labels import LabelError, body_path_problem, check_name
from flowdeck.domain.notes import note_problems
from flowdeck.domain.schedules import schedule_problems
from flowdeck.handlers.base import NodeHandler
from flowdeck.notifications.targets import shape_problems
from flowdeck.sandbox.templates import template_issues
from flowdeck.validation.graph_checks import GraphChecks
from flowdeck.validation.limits import (
    ANALYSIS_FACTOR,
    MAX_DEFINITION_BYTES,
    MAX_EDGES,
    MAX_LABEL_CHARS,
    MAX_NODE_TIMEOUT_SECONDS,
    MAX_NODES,
    MAX_RETRY_ATTEMPTS,
    MAX_RUN_TIMEOUT_SECONDS,
    MAX_TITLE_CHARS,
)
from flowdeck.validation.report import Checks, is_number, quoted_handles, show, type_name
from flowdeck.validation.shapes import CheckedEdge, CheckedGraph, CheckedNode

__all__ = ("DefinitionChecks",)

_log = logging.getLogger(__name__)

_NODE_ID = re.compile(r"[A-Za-z0-9_-]{1,64}")
_EDGE_ID = re.compile(r"[A-Za-z0-9_.:-]{1,128}")
_VARIABLE = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,63}")
_RESERVED_VARIABLES: Final = frozenset({"input", "output", "loop"})
_JOIN_MODES: Final = ("all", "any")
_ERROR_HANDLING: Final = ("continue", "fail_workflow")
_RETRY_KEYS: Final = ("maxAttempts", "backoffSeconds", "maxBackoffSeconds")


class DefinitionChecks(Checks):
    # ------------------------------------------------------------------------------ the definition

    def run(self, raw: Any, raw_size: int | None) -> None:
        if raw_size is not None and raw_size > MAX_DEFINITION_BYTES:
            self.add("too_large", f"the definition is {raw_size:,} bytes; the limit is {MAX_DEFINITION_BYTES:,}")
        if not isinstance(raw, dict):
            self.add("invalid_definition", f"a workflow definition must be a JSON object, not {type_name(raw)}")
            return
        self.check_top_level(raw)
        nodes_raw, edges_raw = raw.get("nodes"), raw.get("edges", [])
        if not isinstance(nodes_raw, list):
            self.add("invalid_definition", f"'nodes' must be a list of nodes, not {type_name(nodes_raw)}")
            return
        if not isinstance(edges_raw, list):
            self.add("invalid_definition", f"'edges' must be a list of edges, not {type_name(edges_raw)}")
            edges_raw = []
        if not self.check_counts(nodes_raw, edges_raw):
            return
        graph = self.collect_nodes(nodes_raw)
        self.collect_edges(edges_raw, graph)
        GraphChecks(self, graph).run()
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
        if is_number(timeout) and 0 < timeout <= MAX_RUN_TIMEOUT_SECONDS:
            self.run_timeout = float(timeout)
        else:
            expected = f"a number above 0 and at most {MAX_RUN_TIMEOUT_SECONDS:,} (31 days)"
            self.bad_field("the workflow", "options.timeoutSeconds", expected, timeout)
        sla = options.get("slaSeconds")
        if sla is not None and not (is_number(sla) and sla > 0):
            self.bad_field("the workflow", "options.slaSeconds", "a number above 0", sla)
        self.problems.extend(shape_problems(options))  # options.onFailure / options.onSlaBreach
        self.check_webhook_labels(options.get("webhookLabels", {}))
        self.check_flow_control(options)
        schedules = options.get("schedules", [])
        if not isinstance(schedules, list) or not all(isinstance(s, dict) for s in schedules):
            self.bad_field("the workflow", "options.schedules", "a list of objects", schedules)
        else:
            self.problems.extend(schedule_problems(schedules))

    def check_webhook_labels(self, paths: Any) -> None:
        if not isinstance(paths, dict):
            self.bad_field("the workflow", "options.webhookLabels", "an object of label name -> body path", paths)
            return
        for name, path in paths.items():
            try:
                check_name(name, "options.webhookLabels")
            except LabelError as exc:
                self.add("invalid_field", f"{exc.field}: {exc.message}", path=exc.field)
                continue
            problem = body_path_problem(path)
            if problem is not None:
                self.bad_field("the workflow", f"options.webhookLabels.{name}", problem, path)

    def check_flow_control(self, options: dict[str, Any]) -> None:
        """options.concurrency / debounce / priority: ranges (domain/flow_control.py), then key templates."""
        problems = flow_control_problems(options)
        self.problems.extend(problems)
        for name in ("concurrency", "debounce"):
            group = options.get(name)
            key = group.get("key") if isinstance(group, dict) else None
            path = f"options.{name}.key"
            if isinstance(key, str) and not any(p.path == path for p in problems):
                for issue in template_issues(key, path):
                    self.add("invalid_template", f"the workflow: {issue.path}: {issue.message}", path=issue.path)

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

    def collect_nodes(self, nodes_raw: list[Any]) -> CheckedGraph:
        graph = CheckedGraph()
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

    def check_node(self, index: int, raw: Any) -> CheckedNode | None:
        if not isinstance(raw, dict):
            self.add("invalid_field", f"nodes[{index}] must be an object, not {type_name(raw)}", path=f"nodes[{index}]")
            return None
        node_id = raw.get("id")
        if not isinstance(node_id, str) or not _NODE_ID.fullmatch(node_id):
            self.add(
                "invalid_field",
                f"nodes[{index}]: id must be 1-64 characters of A-Z a-z 0-9 _ -, not {show(node_id)}",
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
        node = CheckedNode(index, node_id, node_type, handler, config or {}, variable, explicit)
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
            message = f"{where}: unknown node type {show(node_type)}; known types: {known}"
            self.add("unknown_node_type", message, node_id=node_id, path="type")
        return handler, node_type

    def check_node_fields(self, where: str, node_id: str, raw: dict[str, Any]) -> None:
        label = raw.get("label")
        if label is not None and not (isinstance(label, str) and len(label) <= MAX_LABEL_CHARS):
            self.bad_field(where, "label", f"a string of at most {MAX_LABEL_CHARS} characters", label, node_id=node_id)
        position = raw.get("position")
        if position is not None and not (
            isinstance(position, dict) and is_number(position.get("x", 0)) and is_number(position.get("y", 0))
        ):
            self.bad_field(where, "position", "an object {x, y} of numbers", position, node_id=node_id)
        timeout = raw.get("timeoutSeconds")
        handler = self.registry.get(raw["type"]) if isinstance(raw.get("type"), str) else None
        parks = handler is not None and handler.parks
        most = MAX_RUN_TIMEOUT_SECONDS if parks else MAX_NODE_TIMEOUT_SECONDS
        if timeout is not None and not (is_number(timeout) and 0 < timeout <= min(most, self.run_timeout)):
            if self.run_timeout <= most:
                expected = f"a number above 0 and at most options.timeoutSeconds ({self.run_timeout:g})"
            else:
                expected = f"a number above 0 and at most {most:,} ({'31 days' if parks else '24 h'})"
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
                message = f"{where}: retry has an unknown field {show(key)}; known: {', '.join(_RETRY_KEYS)}"
                self.add("invalid_field", message, node_id=node_id, path=f"retry.{show(key)[1:-1]}")
        attempts = retry.get("maxAttempts", 3)
        if isinstance(attempts, bool) or not isinstance(attempts, int) or not 1 <= attempts <= MAX_RETRY_ATTEMPTS:
            expected = f"a whole number from 1 to {MAX_RETRY_ATTEMPTS}"
            self.bad_field(where, "retry.maxAttempts", expected, attempts, node_id=node_id)
        for key in ("backoffSeconds", "maxBackoffSeconds"):
            value = retry.get(key, 0)
            if not (is_number(value) and value >= 0):
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

    def check_config(self, where: str, node: CheckedNode) -> None:
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

    def collect_edges(self, edges_raw: list[Any], graph: CheckedGraph) -> None:
        first_index: dict[str, int] = {}
        for index, raw in enumerate(edges_raw):
            if not isinstance(raw, dict):
                message = f"edges[{index}] must be an object, not {type_name(raw)}"
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
        message = f"edges[{index}]: id must be 1-128 characters of A-Z a-z 0-9 _ - . :, not {show(edge_id)}"
        self.add("invalid_field", message, path=f"edges[{index}].id")
        return None

    def check_edge(
        self, index: int, edge_id: str | None, raw: dict[str, Any], graph: CheckedGraph
    ) -> CheckedEdge | None:
        where = f"edge '{edge_id}'" if edge_id else f"edges[{index}]"
        source, target = (self.check_edge_end(where, edge_id, index, raw, key, graph) for key in ("source", "target"))
        handle = raw.get("sourceHandle")
        if handle is not None and not isinstance(handle, str):
            self.bad_field(where, "sourceHandle", "a string", handle, edge_id=edge_id)
            return None
        if source is None or target is None:
            return None
        return CheckedEdge(edge_id, source, target, handle, where)

    def check_edge_end(
        self, where: str, edge_id: str | None, index: int, raw: dict[str, Any], key: str, graph: CheckedGraph
    ) -> str | None:
        value = raw.get(key)
        path = key if edge_id else f"edges[{index}].{key}"
        if not isinstance(value, str):
            self.add(
                "invalid_field", f"{where}: {key} must be a node id, not {show(value)}", edge_id=edge_id, path=path
            )
            return None
        if value not in graph.nodes:
            message = f"{where}: {key} {show(value)} is not a node of this workflow"
            self.add("edge_missing_node", message, edge_id=edge_id, path=path)
            return None
        return value

    def check_handle(self, edge: CheckedEdge, source: CheckedNode) -> bool:
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
            has = quoted_handles(handles)
            message = f"{edge.where} needs a sourceHandle: node '{source.id}' ({source.type}) has {has}"
        else:
            message = (
                f"{edge.where}: node '{source.id}' ({source.type}) has no output handle {show(edge.handle)}; "
                f"valid handles: {quoted_handles(handles)}"
            )
        self.add("invalid_source_handle", message, edge_id=edge.id, node_id=source.id, path="sourceHandle")
        return False
