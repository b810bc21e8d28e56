"""Compiling a ``python`` node's code: bounded in time, errors in the user's line numbers, cached by hash.

The user writes a function body. It is parsed on its own (so line numbers are the user's), put into
``def user_fn(ctx):`` as an AST, and compiled by RestrictedPython with :class:`NodeCodeTransformer`.
Wrapping the AST rather than indenting the text keeps multi-line string literals intact and needs no
line offset. Before parsing, a size cap and a cheap scan (brackets, indentation, f-string length)
bound the work; after parsing, caps on AST nodes, depth, functions and chained accesses keep the
recursive transformer far from the recursion limit and every compile well under 200 ms.
"""

from __future__ import annotations

import ast
import hashlib
import re
import threading
from collections import OrderedDict
from dataclasses import dataclass
from types import CodeType
from typing import Final, TypeVar

from RestrictedPython.compile import compile_restricted_exec
from RestrictedPython.transformer import RestrictingNodeTransformer

from flowdeck.domain.errors import ConfigIssue

__all__ = (
    "FILENAME",
    "FUNCTION_NAME",
    "MAX_AST_DEPTH",
    "MAX_AST_NODES",
    "MAX_BRACKET_DEPTH",
    "MAX_CHAIN_WORK",
    "MAX_FSTRING_CHARS",
    "MAX_FUNCTIONS",
    "MAX_INDENT_COLUMNS",
    "MAX_SOURCE_BYTES",
    "CodeCompileError",
    "CodeProblem",
    "NodeCodeTransformer",
    "check_code",
    "compile_cached",
    "compile_code",
)

FUNCTION_NAME: Final = "user_fn"
FILENAME: Final = "<node code>"
# Measured on a 2-core box: ordinary code costs about 3 ms per KiB to parse, transform and compile,
# one f-string parses in time quadratic in its length. These caps keep every input well under 200 ms.
MAX_SOURCE_BYTES: Final = 32 * 1024
MAX_AST_NODES: Final = 10_000
MAX_AST_DEPTH: Final = 100
MAX_BRACKET_DEPTH: Final = 50
MAX_INDENT_COLUMNS: Final = 160
MAX_FSTRING_CHARS: Final = 4096
MAX_CHAIN_WORK: Final = 10_000
MAX_FUNCTIONS: Final = 300
_CACHE_SIZE: Final = 256

# Binary operators whose result can be astronomically larger than their operands; policy.py
# provides the guards (``'x' * 10**10``, ``10**10**10``, ``1 << 10**10``).
_GUARDED_BINOPS: Final[dict[type[ast.operator], str]] = {ast.Mult: "_mul_", ast.Pow: "_pow_", ast.LShift: "_lshift_"}

# Strings and comments are skipped so brackets inside them do not count. Possessive quantifiers keep
# an unterminated string from backtracking.
_SCAN = re.compile(
    r"""(?P<str>'''(?:[^'\\]|\\.|'(?!''))*+'''|\"\"\"(?:[^"\\]|\\.|"(?!""))*+\"\"\"
             |'(?:[^'\\\n]|\\.)*+'|"(?:[^"\\\n]|\\.)*+")
      |(?P<comment>\#[^\n]*)
      |(?P<open>[(\[{])
      |(?P<close>[)\]}])
      |(?P<newline>\n[ \t]*)""",
    re.VERBOSE | re.DOTALL,
)
# Each of these becomes its own code object, the costliest thing CPython's compiler builds.
_SCOPES: Final = (ast.FunctionDef, ast.Lambda, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)
_Node = TypeVar("_Node", bound=ast.AST)
_RP_ERROR = re.compile(r"^Line (\d+): (.*)$", re.DOTALL)


@dataclass(frozen=True, slots=True)
class CodeProblem:
    """One reason the code does not compile; ``line`` is 1-based in the user's code."""

    message: str
    line: int | None = None

    def __str__(self) -> str:
        return self.message if self.line is None else f"{self.message} (line {self.line})"


class CodeCompileError(Exception):
    """The code does not compile; ``problems`` lists every reason found."""

    def __init__(self, problems: tuple[CodeProblem, ...]) -> None:
        super().__init__("; ".join(str(problem) for problem in problems))
        self.problems = problems

    @property
    def line(self) -> int | None:
        return self.problems[0].line


class NodeCodeTransformer(RestrictingNodeTransformer):
    """RestrictedPython's policy, minus classes, plus size guards on ``*``, ``**`` and ``<<``."""

    def visit_ClassDef(self, node: ast.ClassDef) -> ast.AST:  # noqa: N802 - ast.NodeVisitor naming
        self.error(node, "class definitions are not allowed in a python node")
        return node

    def visit_BinOp(self, node: ast.BinOp) -> ast.AST:  # noqa: N802 - ast.NodeVisitor naming
        node = self.node_contents_visit(node)
        guard = _GUARDED_BINOPS.get(type(node.op))
        if guard is None:
            return node
        func = ast.copy_location(ast.Name(guard, ast.Load()), node)
        return ast.copy_location(ast.Call(func=func, args=[node.left, node.right], keywords=[]), node)


def _fail(message: str, line: int | None = None) -> CodeCompileError:
    return CodeCompileError((CodeProblem(message, line),))


def _line_at(code: str, position: int) -> int:
    return code.count("\n", 0, position) + 1


def _prescan(code: str) -> None:
    """Reject absurd bracket nesting, indentation or f-string length before the parser sees it."""
    depth = 0
    for match in _SCAN.finditer(code):
        kind = match.lastgroup
        if kind == "str":
            start = match.start()
            if len(match.group()) > MAX_FSTRING_CHARS and "f" in code[max(start - 2, 0) : start].lower():
                raise _fail(f"an f-string is longer than {MAX_FSTRING_CHARS} characters", _line_at(code, start))
        elif kind == "open":
            depth += 1
            if depth > MAX_BRACKET_DEPTH:
                raise _fail(
                    f"brackets are nested more than {MAX_BRACKET_DEPTH} levels deep", _line_at(code, match.start())
                )
        elif kind == "close":
            depth = max(depth - 1, 0)
        elif kind == "newline" and depth == 0:
            columns = len(match.group().expandtabs(8)) - 1
            if columns > MAX_INDENT_COLUMNS and code[match.end() : match.end() + 1] not in ("", "\n", "#"):
                line = _line_at(code, match.start()) + 1
                raise _fail(f"the code is indented more than {MAX_INDENT_COLUMNS} columns deep", line)


def _check_tree(tree: ast.AST) -> None:
    """Cap the node count, the depth and the transformer's work before RestrictedPython runs.

    RestrictedPython re-walks the whole operand of every attribute or item access it rewrites, so a
    chain ``a.b.c...`` costs the square of its length; ``chained`` counts those re-walks.
    """
    count = chained = functions = 0
    stack: list[tuple[ast.AST, int, int]] = [(tree, 0, 0)]
    while stack:
        node, depth, chain = stack.pop()
        count += 1
        chained += chain
        if count > MAX_AST_NODES:
            raise _fail(f"the code is too long: more than {MAX_AST_NODES} syntax elements")
        if depth > MAX_AST_DEPTH:
            raise _fail(
                f"the code is nested more than {MAX_AST_DEPTH} levels deep; split long expressions",
                getattr(node, "lineno", None),
            )
        if chained > MAX_CHAIN_WORK:
            raise _fail("attribute and item accesses are chained too deeply; split long expressions")
        if isinstance(node, ast.Attribute | ast.Subscript):
            chain += 1
        elif isinstance(node, _SCOPES):
            functions += 1
            if functions > MAX_FUNCTIONS:
                raise _fail(f"the code defines more than {MAX_FUNCTIONS} functions, lambdas and comprehensions")
        for name in node._fields:
            value = getattr(node, name, None)
            if isinstance(value, ast.AST):
                stack.append((value, depth + 1, chain))
            elif isinstance(value, list):
                stack.extend((item, depth + 1, chain) for item in value if isinstance(item, ast.AST))


def _at_line_one(node: _Node) -> _Node:
    node.lineno = node.end_lineno = 1  # type: ignore[attr-defined]
    node.col_offset = node.end_col_offset = 0  # type: ignore[attr-defined]
    return node


def _wrap(body: list[ast.stmt]) -> ast.Module:
    """``def user_fn(ctx): <body>`` around the user's parsed statements, which keep their own lines."""
    arguments = ast.arguments(
        posonlyargs=[],
        args=[_at_line_one(ast.arg(arg="ctx"))],
        vararg=None,
        kwonlyargs=[],
        kw_defaults=[],
        kwarg=None,
        defaults=[],
    )
    function = ast.FunctionDef(
        name=FUNCTION_NAME, args=arguments, body=body or [_at_line_one(ast.Pass())], decorator_list=[], returns=None
    )
    return ast.Module(body=[_at_line_one(function)], type_ignores=[])


def _restricted_problem(error: str) -> CodeProblem:
    match = _RP_ERROR.match(error)
    if match is None:
        return CodeProblem(error)
    return CodeProblem(match.group(2), int(match.group(1)))


def compile_code(code: str) -> CodeType:
    """Compile ``code`` (a function body) to a module code object defining ``user_fn(ctx)``."""
    if len(code) > MAX_SOURCE_BYTES or len(code.encode("utf-8", "surrogatepass")) > MAX_SOURCE_BYTES:
        raise _fail(f"the code is longer than {MAX_SOURCE_BYTES // 1024} KiB")
    _prescan(code)
    try:
        tree = ast.parse(code, FILENAME, "exec")
        _check_tree(tree)
        result = compile_restricted_exec(_wrap(tree.body), FILENAME, policy=NodeCodeTransformer)
    except SyntaxError as exc:
        raise _fail(f"{type(exc).__name__}: {exc.msg}", exc.lineno) from None
    except (RecursionError, MemoryError):
        raise _fail("the code is nested too deeply to compile; split long expressions") from None
    except ValueError as exc:  # e.g. "source code string cannot contain null bytes"
        raise _fail(f"invalid source: {exc}") from None
    if result.errors:
        raise CodeCompileError(tuple(_restricted_problem(error) for error in result.errors))
    if result.code is None:
        raise _fail("the code could not be compiled")
    code_object: CodeType = result.code
    return code_object


class _CompileCache:
    """An LRU of compile outcomes keyed by the SHA-256 of the source (failures are cached too)."""

    def __init__(self, size: int) -> None:
        self._size = size
        self._entries: OrderedDict[bytes, CodeType | tuple[CodeProblem, ...]] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, code: str) -> CodeType:
        key = hashlib.sha256(code.encode("utf-8", "surrogatepass")).digest()
        with self._lock:
            entry = self._entries.get(key)
            if entry is not None:
                self._entries.move_to_end(key)
        if entry is None:
            try:
                entry = compile_code(code)
            except CodeCompileError as exc:
                entry = exc.problems
            with self._lock:
                self._entries[key] = entry
                if len(self._entries) > self._size:
                    self._entries.popitem(last=False)
        if isinstance(entry, tuple):
            raise CodeCompileError(entry)
        return entry


_cache = _CompileCache(_CACHE_SIZE)


def compile_cached(code: str) -> CodeType:
    """:func:`compile_code` through a per-process LRU keyed by the source's SHA-256."""
    return _cache.get(code)


def check_code(code: str) -> list[ConfigIssue]:
    """Save-time validation of a python node's ``config.code``: every compile problem, empty when fine."""
    if not code.strip():
        return [ConfigIssue(path="config.code", message="code must not be empty")]
    try:
        compile_cached(code)
    except CodeCompileError as exc:
        return [ConfigIssue(path="config.code", message=str(problem)) for problem in exc.problems]
    return []
