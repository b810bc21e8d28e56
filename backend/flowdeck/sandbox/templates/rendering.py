"""Compiling and running templates and expressions: ``render`` and ``evaluate``.

Compiled sources are cached (LRU); a plain ``ctx`` lookup or a text made only of lookups skips Jinja.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Final

from jinja2 import nodes
from jinja2.environment import Template
from jinja2.runtime import Context, Undefined
from markupsafe import Markup

from flowdeck.sandbox.templates.analysis import Parsed, child_path, parse_expression, parse_template, source_problem
from flowdeck.sandbox.templates.budget import (
    CACHE_SIZE,
    GUARD_VAR,
    MAX_OUTPUT_CHARS,
    Guard,
    LimitError,
    TemplateError,
    current_guard,
    describe,
    enter_guard,
    exit_guard,
    materialize,
)
from flowdeck.sandbox.templates.environment import ENV, VARIABLE

__all__ = ("evaluate", "render")

Key = str | int


@dataclass(frozen=True, slots=True)
class _Compiled:
    """A compiled source. ``lookup``/``parts`` are the fast paths for plain ``ctx`` lookups."""

    template: Template | None = None
    single: bool = False
    lookup: tuple[Key, ...] | None = None
    parts: tuple[str | tuple[Key, ...], ...] | None = None
    deep: bool = True
    error: str | None = None


def _is_plain_key(node: nodes.Node) -> bool:
    return isinstance(node, nodes.Const) and type(node.value) in (str, int)


def _lookup_path(node: nodes.Node) -> tuple[Key, ...] | None:
    """``('input', 'id')`` for ``ctx.input.id`` / ``ctx['input']['id']``; ``None`` for anything else."""
    keys: list[Key] = []
    while True:
        if isinstance(node, nodes.Getattr):
            keys.append(node.attr)
        elif isinstance(node, nodes.Getitem) and _is_plain_key(node.arg):
            keys.append(node.arg.value)  # type: ignore[attr-defined]
        elif isinstance(node, nodes.Name) and node.name == VARIABLE:
            return tuple(reversed(keys))
        else:
            return None
        node = node.node


def _build(ast: nodes.Template) -> Template:
    ast.set_environment(ENV)
    token = GUARD_VAR.set(Guard(compiling=True))
    try:
        return ENV.from_string(ast)
    finally:
        GUARD_VAR.reset(token)


def _fast_parts(ast: nodes.Template) -> tuple[str | tuple[Key, ...], ...] | None:
    """Text and lookup paths of a mixed template made only of ``ctx`` lookups, else ``None``."""
    output = ast.body[0] if ast.body else nodes.Output([])
    parts: list[str | tuple[Key, ...]] = []
    for child in output.nodes if isinstance(output, nodes.Output) else ():
        part = child.data if isinstance(child, nodes.TemplateData) else _lookup_path(child)
        if part is None:
            return None
        parts.append(part)
    return tuple(parts)


def _compile(parsed: Parsed) -> _Compiled:
    try:
        if parsed.expr is not None:
            body = nodes.Assign(nodes.Name("result", "store"), parsed.expr)
            lookup = _lookup_path(parsed.expr)
            return _Compiled(_build(nodes.Template([body], lineno=1)), True, lookup, None, lookup is None)
        assert parsed.ast is not None
        return _Compiled(_build(parsed.ast), False, None, _fast_parts(parsed.ast))
    except Exception as exc:  # noqa: BLE001 (untrusted source: any failure is a compile problem)
        return _Compiled(error=describe(exc))


@functools.lru_cache(maxsize=CACHE_SIZE)
def _compile_template(source: str) -> _Compiled:
    parsed = parse_template(source)
    return _Compiled(error="; ".join(parsed.problems)) if parsed.problems else _compile(parsed)


@functools.lru_cache(maxsize=CACHE_SIZE)
def _compile_expression(source: str, names: frozenset[str] = frozenset()) -> _Compiled:
    parsed = parse_expression(source, names)
    return _Compiled(error="; ".join(parsed.problems)) if parsed.problems else _compile(parsed)


def _compiled(source: Any, what: str, path: str | None, names: frozenset[str] = frozenset()) -> _Compiled:
    problem = source_problem(source, what)
    if problem is not None:
        raise TemplateError(problem, path)
    compiled = _compile_expression(source, names) if what == "an expression" else _compile_template(source)
    if compiled.error is not None:
        raise TemplateError(compiled.error, path)
    return compiled


# ----------------------------------------------------------------------------------------- executing

_MISS: Final = object()


def _fast_lookup(ctx: Mapping[str, Any], keys: tuple[Key, ...]) -> Any:
    """Follow plain keys and list indexes through JSON data; ``_MISS`` sends the caller to Jinja."""
    value: Any = ctx
    for key in keys:
        if type(value) is dict or isinstance(value, Mapping):
            if key not in value:
                return _MISS
            value = value[key]
        elif type(value) is list and type(key) is int and -len(value) <= key < len(value):
            value = value[key]
        else:
            return _MISS
    return value


def _fast_concat(ctx: Mapping[str, Any], parts: tuple[str | tuple[Key, ...], ...]) -> str | None:
    pieces: list[str] = []
    for part in parts:
        if isinstance(part, str):
            pieces.append(part)
            continue
        value = _fast_lookup(ctx, part)
        if value is _MISS:
            return None
        pieces.append(value if isinstance(value, str) else str(value))
    text = "".join(pieces)
    if len(text) > MAX_OUTPUT_CHARS:
        raise LimitError(f"the rendered text is longer than {MAX_OUTPUT_CHARS:,} characters")
    return text


def _to_data(value: Any) -> Any:
    """The JSON value an expression produced; undefined, refused and non-data values are errors."""
    if isinstance(value, Undefined):
        str(value)  # a StrictUndefined raises UndefinedError or SecurityError naming the culprit
        raise LimitError(value._undefined_message)  # a plain Undefined (``x if false`` without else)
    if isinstance(value, Markup):
        return str(value)
    if value is None or isinstance(value, str | int | float | list | dict):
        return value
    if isinstance(value, Mapping):
        return dict(value)
    if isinstance(value, tuple | range | Iterator):
        return materialize(value, current_guard())
    raise LimitError(
        f"the expression produced a {type(value).__name__}, not data (a string, number, boolean, list, object or null)"
    )


def _deep_data(value: Any) -> Any:
    """``_to_data`` on every nested value, copying containers (iterative: data may nest deeply)."""
    root = _to_data(value)
    if not isinstance(root, list | dict):
        return root
    result: list[Any] | dict[Any, Any] = [] if isinstance(root, list) else {}
    stack: list[tuple[list[Any] | dict[Any, Any], list[Any] | dict[Any, Any]]] = [(root, result)]
    while stack:
        source, target = stack.pop()
        for key, item in source.items() if isinstance(source, dict) else enumerate(source):
            data = _to_data(item)
            if isinstance(data, list | dict):
                copy: list[Any] | dict[Any, Any] = [] if isinstance(data, list) else {}
                stack.append((data, copy))
                data = copy
            if isinstance(target, dict):
                target[key] = data
            else:
                target.append(data)
    return result


def _join_output(pieces: Iterator[Any]) -> str:
    out: list[str] = []
    total = 0
    for piece in pieces:
        text = piece if isinstance(piece, str) else str(piece)  # str() of a StrictUndefined raises
        total += len(text)
        if total > MAX_OUTPUT_CHARS:
            raise LimitError(f"the rendered text is longer than {MAX_OUTPUT_CHARS:,} characters")
        out.append(text)
    return "".join(out)


def _run_jinja(compiled: _Compiled, ctx: Mapping[str, Any], names: Mapping[str, Any] | None = None) -> Any:
    template = compiled.template
    assert template is not None
    token = enter_guard()
    try:
        # Context() directly: Template.new_context merges a ChainMap of globals, half the cost of a call
        context = Context(ENV, {**ENV.globals, **(names or {}), VARIABLE: ctx}, template.name, template.blocks)
        if not compiled.single:
            return _join_output(template.root_render_func(context))
        for _ in template.root_render_func(context):
            pass
        result = context.vars["result"]
        return _deep_data(result) if compiled.deep else _to_data(result)
    finally:
        exit_guard(token)


def _run(compiled: _Compiled, ctx: Mapping[str, Any], path: str | None, names: Mapping[str, Any] | None = None) -> Any:
    try:
        if compiled.lookup is not None:
            value = _fast_lookup(ctx, compiled.lookup)
            if value is not _MISS:
                return _to_data(value)
        elif compiled.parts is not None:
            text = _fast_concat(ctx, compiled.parts)
            if text is not None:
                return text
        return _run_jinja(compiled, ctx, names)
    except Exception as exc:  # user code may raise anything: it is reported, never crashed on
        raise TemplateError(describe(exc), path) from exc


def _render_value(value: Any, ctx: Mapping[str, Any], path: str) -> Any:
    if isinstance(value, str):
        return _run(_compiled(value, "a template", path), ctx, path or None) if "{{" in value else value
    if isinstance(value, dict):
        return {key: _render_value(item, ctx, child_path(path, str(key))) for key, item in value.items()}
    if isinstance(value, list):
        return [_render_value(item, ctx, child_path(path, index)) for index, item in enumerate(value)]
    return value


def render(value: Any, ctx: Mapping[str, Any], *, path: str = "") -> Any:
    """Resolve the templates in ``value`` (strings, nested in lists and dicts; keys are not templated).

    ``"{{ expr }}"`` alone gives the expression's native value, other templated strings give ``str``,
    strings without ``{{`` come back untouched. Raises ``TemplateError`` naming the path.
    """
    if isinstance(value, str):
        return _render_value(value, ctx, path) if "{{" in value else value
    token = enter_guard()  # one time and size budget for the whole structure
    try:
        return _render_value(value, ctx, path)
    except RecursionError:
        raise TemplateError("the value nests too deeply", path or None) from None
    finally:
        exit_guard(token)


def evaluate(expression: str, ctx: Mapping[str, Any], names: Mapping[str, Any] | None = None) -> Any:
    """Evaluate a bare expression (``ctx.score.value > 10``) and return its native value. ``names`` binds
    variables besides ``ctx`` (a switch case's ``value``); ``expression_issues`` must be told the same names."""
    bound = frozenset(names or ())
    return _run(_compiled(expression, "an expression", None, bound), ctx, None, names)
