"""Save-time analysis of templates and expressions: parsing (cached), problems, and the ``ctx`` keys used.

Nothing here runs a template: validation and the node handlers use it to report problems by path
and to know which output variables a node refers to.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Final

from jinja2 import nodes
from jinja2.parser import Parser

from flowdeck.domain.errors import ConfigIssue
from flowdeck.sandbox.templates.budget import CACHE_SIZE, MAX_SOURCE_CHARS, describe
from flowdeck.sandbox.templates.environment import ALLOWED_NAMES, DICT_METHODS, ENV, VARIABLE

__all__ = (
    "Parsed",
    "child_path",
    "expression_issues",
    "nested_strings",
    "parse_expression",
    "parse_template",
    "referenced_input_fields",
    "referenced_variables",
    "source_problem",
    "template_issues",
)


_STATEMENTS_REFUSED = "only {{ expressions }} are allowed in templates; {% statements %} are not supported"


@dataclass(frozen=True, slots=True)
class Parsed:
    """A parsed source: its single expression (or its template AST), save-time problems, ``ctx`` keys."""

    expr: nodes.Expr | None = None
    ast: nodes.Template | None = None
    problems: tuple[str, ...] = ()
    refs: frozenset[str] = frozenset()
    input_refs: frozenset[str] = frozenset()
    """The run-input fields it reads: ``X`` for ``ctx.input.X``, ``ctx.input['X']``, ``ctx.input.get('X')``."""


def _walk(node: nodes.Node) -> list[nodes.Node]:
    """The node and all its descendants, depth first (iterative; one walk serves every check)."""
    found: list[nodes.Node] = []
    stack = [node]
    while stack:
        item = stack.pop()
        found.append(item)
        stack.extend(reversed(list(item.iter_child_nodes())))
    return found


def _node_problems(tree: list[nodes.Node], names: frozenset[str] = frozenset()) -> list[str]:
    """Unknown filters, tests and names (``names``: extra ones the caller binds): errors Jinja would only
    raise at compile or run time."""
    problems: list[str] = []
    for item in tree:
        if isinstance(item, nodes.Filter) and item.name not in ENV.filters:
            problems.append(f"no filter named {item.name!r}")
        elif isinstance(item, nodes.Test) and item.name not in ENV.tests:
            problems.append(f"no test named {item.name!r}")
        elif isinstance(item, nodes.Name) and item.name not in ALLOWED_NAMES and item.name not in names:
            problems.append(f"{item.name!r} is undefined: workflow data is under ctx (ctx.{item.name})")
    return list(dict.fromkeys(problems))


def _ctx_key(node: nodes.Node) -> str | None:
    """``X`` for ``ctx.X``, ``ctx['X']`` and ``ctx["X"]``; ``None`` otherwise."""
    if not isinstance(node, nodes.Getattr | nodes.Getitem):
        return None
    if not (isinstance(node.node, nodes.Name) and node.node.name == VARIABLE):
        return None
    if isinstance(node, nodes.Getattr):
        return node.attr
    return node.arg.value if isinstance(node.arg, nodes.Const) and isinstance(node.arg.value, str) else None


def _ctx_refs(tree: list[nodes.Node]) -> frozenset[str]:
    refs: set[str] = set()
    methods: set[int] = set()  # ``ctx.get('X')`` refers to X, not to a key named "get"
    for call in tree:
        method = _ctx_key(call.node) if isinstance(call, nodes.Call) else None
        if isinstance(call, nodes.Call) and method in DICT_METHODS:
            methods.add(id(call.node))
            first = call.args[0] if call.args else None
            if method == "get" and isinstance(first, nodes.Const) and isinstance(first.value, str):
                refs.add(first.value)
    for item in tree:
        key = _ctx_key(item)
        if key is not None and id(item) not in methods:
            refs.add(key)
    return frozenset(refs)


def _input_refs(tree: list[nodes.Node]) -> frozenset[str]:
    refs: set[str] = set()
    methods: set[int] = set()
    for call in tree:
        if not isinstance(call, nodes.Call):
            continue
        target = call.node
        if isinstance(target, nodes.Getattr) and target.attr in DICT_METHODS and _ctx_key(target.node) == "input":
            methods.add(id(target))
            first = call.args[0] if call.args else None
            if target.attr == "get" and isinstance(first, nodes.Const) and isinstance(first.value, str):
                refs.add(first.value)
    for item in tree:
        if not isinstance(item, nodes.Getattr | nodes.Getitem) or id(item) in methods or _ctx_key(item.node) != "input":
            continue
        if isinstance(item, nodes.Getattr):
            refs.add(item.attr)
        elif isinstance(item.arg, nodes.Const) and isinstance(item.arg.value, str):
            refs.add(item.arg.value)
    return frozenset(refs)


def _single_expression(ast: nodes.Template) -> nodes.Expr | None:
    """The expression of a template that is exactly one ``{{ expr }}`` (whitespace around allowed)."""
    if len(ast.body) != 1 or not isinstance(ast.body[0], nodes.Output):
        return None
    children = [
        child for child in ast.body[0].nodes if not (isinstance(child, nodes.TemplateData) and not child.data.strip())
    ]
    if len(children) == 1 and not isinstance(children[0], nodes.TemplateData):
        return children[0]
    return None


@functools.lru_cache(maxsize=CACHE_SIZE)
def parse_template(source: str) -> Parsed:
    try:
        ast = ENV.parse(source)
        tree = _walk(ast)
        problems = _node_problems(tree)
        if any(not isinstance(stmt, nodes.Output) for stmt in ast.body):
            problems.insert(0, _STATEMENTS_REFUSED)
        return Parsed(_single_expression(ast), ast, tuple(problems), _ctx_refs(tree), _input_refs(tree))
    except Exception as exc:  # noqa: BLE001 (untrusted source: any failure is a syntax problem)
        return Parsed(problems=(describe(exc),))


@functools.lru_cache(maxsize=CACHE_SIZE)
def parse_expression(source: str, names: frozenset[str] = frozenset()) -> Parsed:
    """``names``: variables besides ``ctx`` the caller binds (a switch case's ``value``)."""
    try:
        parser = Parser(ENV, source, state="variable")
        expr = parser.parse_expression()
        if not parser.stream.eos:
            parser.fail(f"unexpected {parser.stream.current.value!r} after the expression")
        tree = _walk(expr)
        return Parsed(expr, None, tuple(_node_problems(tree, names)), _ctx_refs(tree), _input_refs(tree))
    except Exception as exc:  # noqa: BLE001 (untrusted source: any failure is a syntax problem)
        return Parsed(problems=(describe(exc),))


def source_problem(source: Any, what: str) -> str | None:
    if not isinstance(source, str):
        return f"{what} must be a string, not {type(source).__name__}"
    if len(source) > MAX_SOURCE_CHARS:
        return f"{what} is longer than {MAX_SOURCE_CHARS:,} characters"
    return None


_MAX_PATH_CHARS: Final = 200


def child_path(path: str, key: Any) -> str:
    """``path.key`` or ``path[index]``, cut at ``_MAX_PATH_CHARS`` so that deep nesting stays linear."""
    if len(path) > _MAX_PATH_CHARS:
        return path
    child = f"{path}[{key}]" if isinstance(key, int) else f"{path}.{key}" if path else str(key)
    return child if len(child) <= _MAX_PATH_CHARS else child[:_MAX_PATH_CHARS] + "…"


def nested_strings(value: Any, path: str) -> Iterator[tuple[str, str]]:
    """Every string nested in ``value`` with its path, in order (iterative: hostile configs nest deeply)."""
    stack: list[tuple[str, Any]] = [(path, value)]
    while stack:
        where, item = stack.pop()
        if isinstance(item, str):
            yield where, item
        elif isinstance(item, dict):
            stack.extend((child_path(where, str(key)), child) for key, child in reversed(item.items()))
        elif isinstance(item, list):
            stack.extend((child_path(where, index), child) for index, child in reversed(list(enumerate(item))))


def expression_issues(expression: str, path: str, names: frozenset[str] = frozenset()) -> list[ConfigIssue]:
    """Save-time check of a condition expression: syntax, unknown filters, tests and names."""
    problem = source_problem(expression, "an expression")
    if problem is not None:
        return [ConfigIssue(path, problem)]
    return [ConfigIssue(path, message) for message in parse_expression(expression, names).problems]


def template_issues(value: Any, path: str) -> list[ConfigIssue]:
    """Save-time check of every template string nested in ``value``."""
    issues: list[ConfigIssue] = []
    for where, text in nested_strings(value, path):
        if "{{" not in text:
            continue
        problem = source_problem(text, "a template")
        problems = (problem,) if problem is not None else parse_template(text).problems
        issues.extend(ConfigIssue(where, message) for message in problems)
    return issues


def referenced_input_fields(value: Any, *, expression: bool = False) -> set[str]:
    """The run-input fields the templates in ``value`` (or bare expressions) read (``ctx.input.X`` gives ``X``)."""
    refs: set[str] = set()
    for _, text in nested_strings(value, ""):
        if source_problem(text, "a source") is not None or not (expression or "{{" in text):
            continue
        refs.update((parse_expression(text) if expression else parse_template(text)).input_refs)
    return refs


def referenced_variables(value: Any, *, expression: bool = False) -> set[str]:
    """The top-level ``ctx`` keys the templates in ``value`` (or, with ``expression=True``, the bare
    expressions) refer to: ``ctx.X``, ``ctx['X']``, ``ctx.get('X')`` give ``X``. Unparsable sources give nothing.
    """
    refs: set[str] = set()
    for _, text in nested_strings(value, ""):
        if source_problem(text, "a source") is not None or not (expression or "{{" in text):
            continue
        refs.update((parse_expression(text) if expression else parse_template(text)).refs)
    return refs
