"""Sandboxed Jinja2 templates and expressions (SPEC §3).

``render`` resolves ``{{ ... }}`` in config values: a string that is exactly one ``{{ expr }}`` keeps the
expression's native value, any other templated string renders to ``str``. ``evaluate`` runs a bare
expression (condition branches). The only variable is ``ctx``; on a mapping, ``ctx.a.items`` prefers
the *key* ``items`` over the dict method, so workflow data always wins over Python attributes.

Hardening, on top of Jinja2's ``ImmutableSandboxedEnvironment`` (no ``_`` attributes, no mutation):

* only ``{{ expressions }}`` (plus text, comments and raw blocks): ``{% statements %}`` are refused, so a
  template has no loops, variables, macros or recursion;
* every value a template *creates* is capped (``MAX_VALUE_SIZE`` characters or items each and
  ``MAX_TOTAL_SIZE`` in total per call) and checked *before* it is built where the size is known up
  front (``*``, ``**``, ``+``, ``%``, ``~``, padding and joining filters), rendered text is capped at
  ``MAX_OUTPUT_CHARS`` and sources at ``MAX_SOURCE_CHARS``;
* nothing that can grow is constant-folded at compile time (intercepted operators, filters, tests),
  so ``10 ** 10 ** 10`` or ``'x'|center(10**6)|list`` cannot hang or bloat the compiler;
* every filter, test, call and operator checks a wall-clock deadline (``TIME_LIMIT_SECONDS``);
* string methods that pad, join or re-format (``format``, ``center``, ``join`` ...) are refused;
* an undefined or refused value is an error, never a silently returned ``Undefined``.

Compiled templates are cached by source (LRU); plain ``ctx`` lookups skip Jinja entirely.
"""

from __future__ import annotations

import functools
import re
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextvars import ContextVar, Token
from dataclasses import dataclass
from itertools import islice
from typing import Any, Final, cast

from jinja2 import nodes
from jinja2.compiler import Frame
from jinja2.environment import Template
from jinja2.exceptions import SecurityError, TemplateSyntaxError
from jinja2.exceptions import TemplateError as JinjaError
from jinja2.filters import (
    do_batch,
    do_center,
    do_format,
    do_indent,
    do_replace,
    do_tojson,
    do_wordwrap,
    sync_do_join,
    sync_do_slice,
    sync_do_sum,
)
from jinja2.nativetypes import NativeCodeGenerator, NativeEnvironment
from jinja2.nodes import EvalContext
from jinja2.parser import Parser
from jinja2.runtime import Context, StrictUndefined, Undefined
from jinja2.sandbox import ImmutableSandboxedEnvironment
from jinja2.utils import missing, object_type_repr, pass_environment, pass_eval_context
from markupsafe import Markup

from flowdeck.handlers.base import ConfigIssue

__all__ = (
    "MAX_OUTPUT_CHARS",
    "MAX_SOURCE_CHARS",
    "MAX_TOTAL_SIZE",
    "MAX_VALUE_SIZE",
    "TemplateError",
    "evaluate",
    "expression_issues",
    "nested_strings",
    "referenced_variables",
    "render",
    "template_issues",
)

MAX_SOURCE_CHARS: Final = 64 * 1024
MAX_OUTPUT_CHARS: Final = 1024 * 1024
MAX_VALUE_SIZE: Final = 1024 * 1024
MAX_TOTAL_SIZE: Final = 8 * MAX_VALUE_SIZE
MAX_INT_BITS: Final = 4096
MAX_JSON_INDENT: Final = 16
TIME_LIMIT_SECONDS = 1.0  # per render/evaluate call; a module variable so tests can shorten it
CACHE_SIZE: Final = 2048

_VARIABLE = "ctx"
_GLOBALS_KEPT = frozenset({"range", "dict"})
_REMOVED_FILTERS = frozenset({"urlize"})  # adds caller-chosen text per URL found: unbounded growth
_REFUSED_STR_METHODS: Final = {
    "center": "the |center filter",
    "ljust": "the |center filter or ~",
    "rjust": "the |center filter or ~",
    "zfill": "the |format filter",
    "expandtabs": "the |replace filter",
    "format": "~ or the |format filter",
    "format_map": "~ or the |format filter",
    "join": "the |join filter",
    "replace": "the |replace filter",
    "encode": None,
    "translate": "the |replace filter",
    "maketrans": None,
}
_REFUSED_INT_METHODS: Final = frozenset({"to_bytes", "from_bytes"})
_DICT_METHODS: Final = frozenset({"get", "items", "keys", "values"})

Key = str | int


# --------------------------------------------------------------------------------------------- errors


class TemplateError(Exception):
    """A template or expression could not be compiled or evaluated. ``message`` names the path."""

    def __init__(self, problem: str, path: str | None = None) -> None:
        self.path: str | None = path or None
        self.problem = problem
        self.message: str = f"{path}: {problem}" if path else problem
        super().__init__(self.message)


class _LimitError(Exception):
    """A sandbox limit was hit (raised inside template code, turned into ``TemplateError``)."""


def _describe(exc: BaseException) -> str:
    if isinstance(exc, TemplateSyntaxError):
        return f"syntax error: {exc.message} (line {exc.lineno})"
    if isinstance(exc, JinjaError):
        return exc.message or type(exc).__name__
    if isinstance(exc, _LimitError):
        return str(exc)
    if isinstance(exc, RecursionError):
        return "the template nests too deeply"
    if isinstance(exc, MemoryError):
        return "the template needs too much memory"
    return f"{type(exc).__name__}: {exc}"


# -------------------------------------------------------------------------------------------- budget


class _Guard:
    """Time and size budget of one ``render``/``evaluate`` call (or one compilation)."""

    __slots__ = ("compiling", "deadline", "size_left")

    def __init__(self, *, compiling: bool = False) -> None:
        self.compiling = compiling
        self.deadline = time.monotonic() + TIME_LIMIT_SECONDS
        self.size_left = MAX_TOTAL_SIZE

    def tick(self) -> None:
        if time.monotonic() > self.deadline:
            raise _LimitError(f"the template ran longer than {TIME_LIMIT_SECONDS:g} s")

    def charge(self, size: int) -> None:
        self.size_left -= size
        if self.size_left < 0:
            raise _LimitError(f"the template produces more than {MAX_TOTAL_SIZE:,} characters or items in total")


_GUARD: ContextVar[_Guard | None] = ContextVar("flowdeck_template_guard", default=None)


def _guard() -> _Guard:
    return _GUARD.get() or _Guard()


def _enter_guard() -> Token[_Guard | None] | None:
    if _GUARD.get() is not None:
        return None
    return _GUARD.set(_Guard())


def _exit_guard(token: Token[_Guard | None] | None) -> None:
    if token is not None:
        _GUARD.reset(token)


def _check_size(size: int, what: str) -> None:
    if size > MAX_VALUE_SIZE:
        raise _LimitError(f"{what} would produce more than {MAX_VALUE_SIZE:,} characters or items")


def _account(value: Any, guard: _Guard) -> Any:
    """Charge a value the template created against the budget."""
    if isinstance(value, str | list | tuple | dict | bytes):
        _check_size(len(value), "an operation")
        guard.charge(len(value))
    return value


def _materialize(value: Iterable[Any], guard: _Guard) -> list[Any]:
    items = list(islice(iter(value), MAX_VALUE_SIZE + 1))
    _check_size(len(items), "a sequence")
    guard.charge(len(items))
    return items


# ------------------------------------------------------------------------------- operators and format

_PRINTF_SPEC = re.compile(r"%(?:\([^)]*\))?[#0 +-]*(\*|\d+)?(?:\.(\*|\d+))?[hlL]?[a-zA-Z%]")


def _check_number_arg(value: Any, what: str) -> None:
    if isinstance(value, int) and value > MAX_VALUE_SIZE:
        raise _LimitError(f"{what} {value if value.bit_length() < 64 else 'huge'} exceeds {MAX_VALUE_SIZE:,}")


def _check_printf(fmt: Any, args: Any) -> None:
    """Refuse printf-style widths or precisions that would allocate huge strings."""
    if not isinstance(fmt, str):
        return
    star = False
    for match in _PRINTF_SPEC.finditer(fmt):
        for group in match.groups():
            if group == "*":
                star = True
            elif group and (len(group) > 7 or int(group) > MAX_VALUE_SIZE):
                raise _LimitError(f"a format width or precision above {MAX_VALUE_SIZE:,} is not allowed")
    if star:
        values = args.values() if isinstance(args, dict) else args if isinstance(args, tuple) else (args,)
        for value in values:
            _check_number_arg(value, "a format width")


def _check_multiply(left: Any, right: Any) -> None:
    for seq, count in ((left, right), (right, left)):
        if isinstance(seq, str | list | tuple) and isinstance(count, int):
            if count > 0 and len(seq) > 0:
                _check_size(len(seq) * count, "repeating a sequence")
            return
    if isinstance(left, int) and isinstance(right, int) and left.bit_length() + right.bit_length() > MAX_INT_BITS:
        raise _LimitError(f"the product is larger than {MAX_INT_BITS} bits")


def _check_power(base: Any, exponent: Any) -> None:
    big = isinstance(base, int) and isinstance(exponent, int) and exponent > 0 and abs(base) > 1
    if big and base.bit_length() * exponent > MAX_INT_BITS:
        raise _LimitError(f"the power is larger than {MAX_INT_BITS} bits")


def _check_binop(operator: str, left: Any, right: Any) -> None:
    if operator == "*":
        _check_multiply(left, right)
    elif operator == "**":
        _check_power(left, right)
    elif operator == "+" and isinstance(left, str | list | tuple) and isinstance(right, str | list | tuple):
        _check_size(len(left) + len(right), "adding two sequences")
    elif operator == "%":
        _check_printf(left, right)


# ------------------------------------------------------------------------------------------- filters


def _check_positive_count(value: Any, what: str) -> None:
    if not isinstance(value, int) or value < 1:
        raise _LimitError(f"{what} must be a positive whole number")
    _check_number_arg(value, what)


def _center(value: Any, width: int = 80) -> str:
    _check_number_arg(width, "the |center width")
    return do_center(value, width)


def _indent(s: Any, width: int | str = 4, first: bool = False, blank: bool = False) -> str:
    text = str(s)
    step = len(width) if isinstance(width, str) else width if isinstance(width, int) else 0
    _check_size(len(text) + (text.count("\n") + 1) * max(step, 0), "|indent")
    return do_indent(text, width, first, blank)


@pass_environment
def _wordwrap(environment: Any, s: Any, width: int = 79, break_long_words: bool = True,
              wrapstring: str | None = None, break_on_hyphens: bool = True) -> str:  # fmt: skip
    text = str(s)
    _check_size(len(text) + (len(text) + 1) * len(str(wrapstring or "\n")), "|wordwrap")
    return do_wordwrap(environment, text, width, break_long_words, wrapstring, break_on_hyphens)


def _format(value: Any, *args: Any, **kwargs: Any) -> str:
    _check_printf(value, kwargs or args)
    return do_format(value, *args, **kwargs)


@pass_eval_context
def _join(eval_ctx: EvalContext, value: Iterable[Any], d: str = "", attribute: str | int | None = None) -> str:
    items = _materialize(value, _guard())
    _check_size(max(len(items) - 1, 0) * len(str(d)), "|join")
    return sync_do_join(eval_ctx, items, d, attribute)


@pass_eval_context
def _replace(eval_ctx: EvalContext, s: Any, old: Any, new: Any, count: int | None = None) -> str:
    text, old_text, new_text = str(s), str(old), str(new)
    found = text.count(old_text) if old_text else len(text) + 1
    if count is not None and count >= 0:
        found = min(found, count)
    _check_size(len(text) + found * max(len(new_text) - len(old_text), 0), "|replace")
    return do_replace(eval_ctx, s, old, new, count)


def _batch(value: Iterable[Any], linecount: int, fill_with: Any = None) -> Iterator[list[Any]]:
    _check_positive_count(linecount, "the |batch size")
    return do_batch(value, linecount, fill_with)


def _slice(value: Any, slices: int, fill_with: Any = None) -> Iterator[list[Any]]:
    _check_positive_count(slices, "the |slice count")
    _guard().charge(slices)
    return sync_do_slice(value, slices, fill_with)


@pass_environment
def _sum(environment: Any, iterable: Iterable[Any], attribute: str | int | None = None, start: Any = 0) -> Any:
    if isinstance(start, bool) or not isinstance(start, int | float):
        raise _LimitError("|sum adds numbers only (start must be a number)")
    return sync_do_sum(environment, iterable, attribute, start)


@pass_eval_context
def _tojson(eval_ctx: EvalContext, value: Any, indent: int | None = None) -> Markup:
    if indent is not None and not (isinstance(indent, int) and 0 <= indent <= MAX_JSON_INDENT):
        raise _LimitError(f"the |tojson indent must be a number from 0 to {MAX_JSON_INDENT}")
    return do_tojson(eval_ctx, value, indent)


_FILTER_REPLACEMENTS: Final[dict[str, Callable[..., Any]]] = {
    "batch": _batch,
    "center": _center,
    "format": _format,
    "indent": _indent,
    "join": _join,
    "replace": _replace,
    "slice": _slice,
    "sum": _sum,
    "tojson": _tojson,
    "wordwrap": _wordwrap,
}


def _budgeted(func: Callable[..., Any], *, account: bool) -> Callable[..., Any]:
    """Wrap a filter or test: check the deadline before, charge the result after (keeps ``jinja_pass_arg``)."""

    @functools.wraps(func)
    def budgeted(*args: Any, **kwargs: Any) -> Any:
        guard = _guard()
        if guard.compiling:
            raise nodes.Impossible  # no constant folding: it would embed big results in the code
        guard.tick()
        result = func(*args, **kwargs)
        return _account(result, guard) if account else result

    return budgeted


# --------------------------------------------------------------------------------------- environment


class _StrictUndefined(StrictUndefined):
    """StrictUndefined with messages that name what is missing: ``'missing' is undefined``."""

    __slots__ = ()

    @property
    def _undefined_message(self) -> str:
        if self._undefined_hint:
            return self._undefined_hint
        name = self._undefined_name
        if self._undefined_obj is missing:
            return f"{name!r} is undefined"
        if not isinstance(name, str):
            return f"{name!r} is undefined ({object_type_repr(self._undefined_obj)} has no element {name!r})"
        return f"{name!r} is undefined ({object_type_repr(self._undefined_obj)} has no key or attribute {name!r})"


class _CodeGenerator(NativeCodeGenerator):
    def visit_Concat(self, node: nodes.Concat, frame: Frame) -> None:  # noqa: N802 (Jinja's visitor naming)
        """``a ~ b`` goes through ``environment.guarded_concat`` so its size is checked before joining."""
        self.write("environment.guarded_concat((")
        for arg in node.nodes:
            self.visit(arg, frame)
            self.write(", ")
        self.write("))")


class _SandboxEnvironment(ImmutableSandboxedEnvironment, NativeEnvironment):
    code_generator_class = _CodeGenerator
    intercepted_binops = frozenset({"*", "**", "+", "%"})

    def is_safe_attribute(self, obj: Any, attr: str, value: Any) -> bool:
        if not super().is_safe_attribute(obj, attr, value):
            return False
        if isinstance(obj, str):
            return attr not in _REFUSED_STR_METHODS
        return not (isinstance(obj, int) and attr in _REFUSED_INT_METHODS)

    def unsafe_undefined(self, obj: Any, attribute: str) -> Undefined:
        hint = _REFUSED_STR_METHODS.get(attribute) if isinstance(obj, str) else None
        advice = f"; use {hint} instead" if hint else ""
        return self.undefined(
            f"access to attribute {attribute!r} of a {type(obj).__name__!r} object is refused{advice}",
            name=attribute,
            obj=obj,
            exc=SecurityError,
        )

    def wrap_str_format(self, value: Any) -> None:
        """``str.format`` is refused outright (``is_safe_attribute``) instead of being wrapped."""

    def getattr(self, obj: Any, attribute: str) -> Any:
        if isinstance(obj, Mapping):
            try:
                return obj[attribute]
            except (KeyError, TypeError):
                pass
        return super().getattr(obj, attribute)

    def call(self, context: Context, obj: Any, /, *args: Any, **kwargs: Any) -> Any:
        guard = _guard()
        guard.tick()
        return _account(super().call(context, obj, *args, **kwargs), guard)

    def call_binop(self, context: Context, operator: str, left: Any, right: Any) -> Any:
        guard = _guard()
        guard.tick()
        _check_binop(operator, left, right)
        return _account(self.binop_table[operator](left, right), guard)

    def guarded_concat(self, values: tuple[Any, ...]) -> str:
        guard = _guard()
        guard.tick()
        parts = [str(value) for value in values]  # str() of a StrictUndefined raises
        _check_size(sum(map(len, parts)), "~")
        return _account("".join(parts), guard)  # type: ignore[no-any-return]


def _build_environment() -> _SandboxEnvironment:
    env = _SandboxEnvironment(undefined=_StrictUndefined, keep_trailing_newline=True, autoescape=False, cache_size=0)
    for name in [name for name in env.globals if name not in _GLOBALS_KEPT]:
        del env.globals[name]
    for name in _REMOVED_FILTERS:
        env.filters.pop(name, None)
    env.filters.update(_FILTER_REPLACEMENTS)
    env.filters = {name: _budgeted(func, account=True) for name, func in env.filters.items()}
    tests = cast("dict[str, Callable[..., Any]]", env.tests)
    env.tests = {name: _budgeted(func, account=False) for name, func in tests.items()}
    return env


_ENV: Final = _build_environment()
_ALLOWED_NAMES: Final = frozenset({_VARIABLE, *_GLOBALS_KEPT})


# ------------------------------------------------------------------------------------------- parsing

_STATEMENTS_REFUSED = "only {{ expressions }} are allowed in templates; {% statements %} are not supported"


@dataclass(frozen=True, slots=True)
class _Parsed:
    """A parsed source: its single expression (or its template AST), save-time problems, ``ctx`` keys."""

    expr: nodes.Expr | None = None
    ast: nodes.Template | None = None
    problems: tuple[str, ...] = ()
    refs: frozenset[str] = frozenset()


def _walk(node: nodes.Node) -> list[nodes.Node]:
    """The node and all its descendants, depth first (iterative; one walk serves every check)."""
    found: list[nodes.Node] = []
    stack = [node]
    while stack:
        item = stack.pop()
        found.append(item)
        stack.extend(reversed(list(item.iter_child_nodes())))
    return found


def _node_problems(tree: list[nodes.Node]) -> list[str]:
    """Unknown filters, tests and names: errors Jinja would only raise at compile or run time."""
    problems: list[str] = []
    for item in tree:
        if isinstance(item, nodes.Filter) and item.name not in _ENV.filters:
            problems.append(f"no filter named {item.name!r}")
        elif isinstance(item, nodes.Test) and item.name not in _ENV.tests:
            problems.append(f"no test named {item.name!r}")
        elif isinstance(item, nodes.Name) and item.name not in _ALLOWED_NAMES:
            problems.append(f"{item.name!r} is undefined: workflow data is under ctx (ctx.{item.name})")
    return list(dict.fromkeys(problems))


def _ctx_key(node: nodes.Node) -> str | None:
    """``X`` for ``ctx.X``, ``ctx['X']`` and ``ctx["X"]``; ``None`` otherwise."""
    if not isinstance(node, nodes.Getattr | nodes.Getitem):
        return None
    if not (isinstance(node.node, nodes.Name) and node.node.name == _VARIABLE):
        return None
    if isinstance(node, nodes.Getattr):
        return node.attr
    return node.arg.value if isinstance(node.arg, nodes.Const) and isinstance(node.arg.value, str) else None


def _ctx_refs(tree: list[nodes.Node]) -> frozenset[str]:
    refs: set[str] = set()
    methods: set[int] = set()  # ``ctx.get('X')`` refers to X, not to a key named "get"
    for call in tree:
        method = _ctx_key(call.node) if isinstance(call, nodes.Call) else None
        if isinstance(call, nodes.Call) and method in _DICT_METHODS:
            methods.add(id(call.node))
            first = call.args[0] if call.args else None
            if method == "get" and isinstance(first, nodes.Const) and isinstance(first.value, str):
                refs.add(first.value)
    for item in tree:
        key = _ctx_key(item)
        if key is not None and id(item) not in methods:
            refs.add(key)
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
def _parse_template(source: str) -> _Parsed:
    try:
        ast = _ENV.parse(source)
        tree = _walk(ast)
        problems = _node_problems(tree)
        if any(not isinstance(stmt, nodes.Output) for stmt in ast.body):
            problems.insert(0, _STATEMENTS_REFUSED)
        return _Parsed(_single_expression(ast), ast, tuple(problems), _ctx_refs(tree))
    except Exception as exc:  # noqa: BLE001 (untrusted source: any failure is a syntax problem)
        return _Parsed(problems=(_describe(exc),))


@functools.lru_cache(maxsize=CACHE_SIZE)
def _parse_expression(source: str) -> _Parsed:
    try:
        parser = Parser(_ENV, source, state="variable")
        expr = parser.parse_expression()
        if not parser.stream.eos:
            parser.fail(f"unexpected {parser.stream.current.value!r} after the expression")
        tree = _walk(expr)
        return _Parsed(expr, None, tuple(_node_problems(tree)), _ctx_refs(tree))
    except Exception as exc:  # noqa: BLE001 (untrusted source: any failure is a syntax problem)
        return _Parsed(problems=(_describe(exc),))


def _source_problem(source: Any, what: str) -> str | None:
    if not isinstance(source, str):
        return f"{what} must be a string, not {type(source).__name__}"
    if len(source) > MAX_SOURCE_CHARS:
        return f"{what} is longer than {MAX_SOURCE_CHARS:,} characters"
    return None


# ----------------------------------------------------------------------------------------- compiling


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
        elif isinstance(node, nodes.Name) and node.name == _VARIABLE:
            return tuple(reversed(keys))
        else:
            return None
        node = node.node


def _build(ast: nodes.Template) -> Template:
    ast.set_environment(_ENV)
    token = _GUARD.set(_Guard(compiling=True))
    try:
        return _ENV.from_string(ast)
    finally:
        _GUARD.reset(token)


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


def _compile(parsed: _Parsed) -> _Compiled:
    try:
        if parsed.expr is not None:
            body = nodes.Assign(nodes.Name("result", "store"), parsed.expr)
            lookup = _lookup_path(parsed.expr)
            return _Compiled(_build(nodes.Template([body], lineno=1)), True, lookup, None, lookup is None)
        assert parsed.ast is not None
        return _Compiled(_build(parsed.ast), False, None, _fast_parts(parsed.ast))
    except Exception as exc:  # noqa: BLE001 (untrusted source: any failure is a compile problem)
        return _Compiled(error=_describe(exc))


@functools.lru_cache(maxsize=CACHE_SIZE)
def _compile_template(source: str) -> _Compiled:
    parsed = _parse_template(source)
    return _Compiled(error="; ".join(parsed.problems)) if parsed.problems else _compile(parsed)


@functools.lru_cache(maxsize=CACHE_SIZE)
def _compile_expression(source: str) -> _Compiled:
    parsed = _parse_expression(source)
    return _Compiled(error="; ".join(parsed.problems)) if parsed.problems else _compile(parsed)


def _compiled(source: Any, what: str, path: str | None) -> _Compiled:
    problem = _source_problem(source, what)
    if problem is not None:
        raise TemplateError(problem, path)
    compiled = _compile_expression(source) if what == "an expression" else _compile_template(source)
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
        raise _LimitError(f"the rendered text is longer than {MAX_OUTPUT_CHARS:,} characters")
    return text


def _to_data(value: Any) -> Any:
    """The JSON value an expression produced; undefined, refused and non-data values are errors."""
    if isinstance(value, Undefined):
        str(value)  # a StrictUndefined raises UndefinedError or SecurityError naming the culprit
        raise _LimitError(value._undefined_message)  # a plain Undefined (``x if false`` without else)
    if isinstance(value, Markup):
        return str(value)
    if value is None or isinstance(value, str | int | float | list | dict):
        return value
    if isinstance(value, Mapping):
        return dict(value)
    if isinstance(value, tuple | range | Iterator):
        return _materialize(value, _guard())
    raise _LimitError(
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
            raise _LimitError(f"the rendered text is longer than {MAX_OUTPUT_CHARS:,} characters")
        out.append(text)
    return "".join(out)


def _run_jinja(compiled: _Compiled, ctx: Mapping[str, Any]) -> Any:
    template = compiled.template
    assert template is not None
    token = _enter_guard()
    try:
        # Context() directly: Template.new_context merges a ChainMap of globals, half the cost of a call
        context = Context(_ENV, {**_ENV.globals, _VARIABLE: ctx}, template.name, template.blocks)
        if not compiled.single:
            return _join_output(template.root_render_func(context))
        for _ in template.root_render_func(context):
            pass
        result = context.vars["result"]
        return _deep_data(result) if compiled.deep else _to_data(result)
    finally:
        _exit_guard(token)


def _run(compiled: _Compiled, ctx: Mapping[str, Any], path: str | None) -> Any:
    try:
        if compiled.lookup is not None:
            value = _fast_lookup(ctx, compiled.lookup)
            if value is not _MISS:
                return _to_data(value)
        elif compiled.parts is not None:
            text = _fast_concat(ctx, compiled.parts)
            if text is not None:
                return text
        return _run_jinja(compiled, ctx)
    except Exception as exc:  # user code may raise anything: it is reported, never crashed on
        raise TemplateError(_describe(exc), path) from exc


# ------------------------------------------------------------------------------------------- the API


_MAX_PATH_CHARS: Final = 200


def _child(path: str, key: Any) -> str:
    """``path.key`` or ``path[index]``, cut at ``_MAX_PATH_CHARS`` so that deep nesting stays linear."""
    if len(path) > _MAX_PATH_CHARS:
        return path
    child = f"{path}[{key}]" if isinstance(key, int) else f"{path}.{key}" if path else str(key)
    return child if len(child) <= _MAX_PATH_CHARS else child[:_MAX_PATH_CHARS] + "…"


def _render_value(value: Any, ctx: Mapping[str, Any], path: str) -> Any:
    if isinstance(value, str):
        return _run(_compiled(value, "a template", path), ctx, path or None) if "{{" in value else value
    if isinstance(value, dict):
        return {key: _render_value(item, ctx, _child(path, str(key))) for key, item in value.items()}
    if isinstance(value, list):
        return [_render_value(item, ctx, _child(path, index)) for index, item in enumerate(value)]
    return value


def render(value: Any, ctx: Mapping[str, Any], *, path: str = "") -> Any:
    """Resolve the templates in ``value`` (strings, nested in lists and dicts; keys are not templated).

    ``"{{ expr }}"`` alone gives the expression's native value, other templated strings give ``str``,
    strings without ``{{`` come back untouched. Raises ``TemplateError`` naming the path.
    """
    if isinstance(value, str):
        return _render_value(value, ctx, path) if "{{" in value else value
    token = _enter_guard()  # one time and size budget for the whole structure
    try:
        return _render_value(value, ctx, path)
    except RecursionError:
        raise TemplateError("the value nests too deeply", path or None) from None
    finally:
        _exit_guard(token)


def evaluate(expression: str, ctx: Mapping[str, Any]) -> Any:
    """Evaluate a bare expression (``ctx.score.value > 10``) and return its native value."""
    return _run(_compiled(expression, "an expression", None), ctx, None)


def nested_strings(value: Any, path: str) -> Iterator[tuple[str, str]]:
    """Every string nested in ``value`` with its path, in order (iterative: hostile configs nest deeply)."""
    stack: list[tuple[str, Any]] = [(path, value)]
    while stack:
        where, item = stack.pop()
        if isinstance(item, str):
            yield where, item
        elif isinstance(item, dict):
            stack.extend((_child(where, str(key)), child) for key, child in reversed(item.items()))
        elif isinstance(item, list):
            stack.extend((_child(where, index), child) for index, child in reversed(list(enumerate(item))))


def expression_issues(expression: str, path: str) -> list[ConfigIssue]:
    """Save-time check of a condition expression: syntax, unknown filters, tests and names."""
    problem = _source_problem(expression, "an expression")
    if problem is not None:
        return [ConfigIssue(path, problem)]
    return [ConfigIssue(path, message) for message in _parse_expression(expression).problems]


def template_issues(value: Any, path: str) -> list[ConfigIssue]:
    """Save-time check of every template string nested in ``value``."""
    issues: list[ConfigIssue] = []
    for where, text in nested_strings(value, path):
        if "{{" not in text:
            continue
        problem = _source_problem(text, "a template")
        problems = (problem,) if problem is not None else _parse_template(text).problems
        issues.extend(ConfigIssue(where, message) for message in problems)
    return issues


def referenced_variables(value: Any, *, expression: bool = False) -> set[str]:
    """The top-level ``ctx`` keys the templates in ``value`` (or, with ``expression=True``, the bare
    expressions) refer to: ``ctx.X``, ``ctx['X']``, ``ctx.get('X')`` give ``X``. Unparsable sources give nothing.
    """
    refs: set[str] = set()
    for _, text in nested_strings(value, ""):
        if _source_problem(text, "a source") is not None or not (expression or "{{" in text):
            continue
        refs.update((_parse_expression(text) if expression else _parse_template(text)).refs)
    return refs
