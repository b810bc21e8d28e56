"""The limits of a template call and its budget: time and size checked before anything big is built.

One ``Guard`` per ``render``/``evaluate`` call (or compilation) holds the deadline (in thread CPU time) and
the size left; operators and filters charge it. ``TIME_LIMIT_SECONDS`` is a module variable so tests can shorten it.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterable
from contextvars import ContextVar, Token
from itertools import islice
from typing import Any, Final

from jinja2.exceptions import TemplateError as JinjaError
from jinja2.exceptions import TemplateSyntaxError

__all__ = (
    "CACHE_SIZE",
    "GUARD_VAR",
    "MAX_INT_BITS",
    "MAX_JSON_INDENT",
    "MAX_OUTPUT_CHARS",
    "MAX_SOURCE_CHARS",
    "MAX_TOTAL_SIZE",
    "MAX_VALUE_SIZE",
    "TIME_LIMIT_SECONDS",
    "Guard",
    "LimitError",
    "TemplateError",
    "account_for",
    "check_binop",
    "check_number_arg",
    "check_printf",
    "check_size",
    "current_guard",
    "describe",
    "enter_guard",
    "exit_guard",
    "materialize",
)

MAX_SOURCE_CHARS: Final = 64 * 1024
MAX_OUTPUT_CHARS: Final = 1024 * 1024
MAX_VALUE_SIZE: Final = 1024 * 1024
MAX_TOTAL_SIZE: Final = 8 * MAX_VALUE_SIZE
MAX_INT_BITS: Final = 4096
MAX_JSON_INDENT: Final = 16
TIME_LIMIT_SECONDS = 1.0  # per render/evaluate call; a module variable so tests can shorten it
CACHE_SIZE: Final = 2048


# --------------------------------------------------------------------------------------------- errors


class TemplateError(Exception):
    """A template or expression could not be compiled or evaluated. ``message`` names the path."""

    def __init__(self, problem: str, path: str | None = None) -> None:
        self.path: str | None = path or None
        self.problem = problem
        self.message: str = f"{path}: {problem}" if path else problem
        super().__init__(self.message)


class LimitError(Exception):
    """A sandbox limit was hit (raised inside template code, turned into ``TemplateError``)."""


def describe(exc: BaseException) -> str:
    if isinstance(exc, TemplateSyntaxError):
        return f"syntax error: {exc.message} (line {exc.lineno})"
    if isinstance(exc, JinjaError):
        return exc.message or type(exc).__name__
    if isinstance(exc, LimitError):
        return str(exc)
    if isinstance(exc, RecursionError):
        return "the template nests too deeply"
    if isinstance(exc, MemoryError):
        return "the template needs too much memory"
    return f"{type(exc).__name__}: {exc}"


# -------------------------------------------------------------------------------------------- budget


class Guard:
    """Time and size budget of one ``render``/``evaluate`` call (or one compilation)."""

    __slots__ = ("compiling", "deadline", "size_left")

    def __init__(self, *, compiling: bool = False) -> None:
        self.compiling = compiling
        self.deadline = time.thread_time() + TIME_LIMIT_SECONDS
        self.size_left = MAX_TOTAL_SIZE

    def tick(self) -> None:
        # The CPU time of this thread, not the wall clock: a process stopped (SIGSTOP), swapped out or starved
        # by a busy machine mid-render must not fail a node for good; a runaway template burns CPU.
        if time.thread_time() > self.deadline:
            raise LimitError(f"the template ran longer than {TIME_LIMIT_SECONDS:g} s")

    def charge(self, size: int) -> None:
        self.size_left -= size
        if self.size_left < 0:
            raise LimitError(f"the template produces more than {MAX_TOTAL_SIZE:,} characters or items in total")


GUARD_VAR: ContextVar[Guard | None] = ContextVar("flowdeck_template_guard", default=None)


def current_guard() -> Guard:
    return GUARD_VAR.get() or Guard()


def enter_guard() -> Token[Guard | None] | None:
    if GUARD_VAR.get() is not None:
        return None
    return GUARD_VAR.set(Guard())


def exit_guard(token: Token[Guard | None] | None) -> None:
    if token is not None:
        GUARD_VAR.reset(token)


def check_size(size: int, what: str) -> None:
    if size > MAX_VALUE_SIZE:
        raise LimitError(f"{what} would produce more than {MAX_VALUE_SIZE:,} characters or items")


def account_for(value: Any, guard: Guard) -> Any:
    """Charge a value the template created against the budget."""
    if isinstance(value, str | list | tuple | dict | bytes):
        check_size(len(value), "an operation")
        guard.charge(len(value))
    return value


def materialize(value: Iterable[Any], guard: Guard) -> list[Any]:
    items = list(islice(iter(value), MAX_VALUE_SIZE + 1))
    check_size(len(items), "a sequence")
    guard.charge(len(items))
    return items


# ------------------------------------------------------------------------------- operators and format

_PRINTF_SPEC = re.compile(r"%(?:\([^)]*\))?[#0 +-]*(\*|\d+)?(?:\.(\*|\d+))?[hlL]?[a-zA-Z%]")


def check_number_arg(value: Any, what: str) -> None:
    if isinstance(value, int) and value > MAX_VALUE_SIZE:
        raise LimitError(f"{what} {value if value.bit_length() < 64 else 'huge'} exceeds {MAX_VALUE_SIZE:,}")


def check_printf(fmt: Any, args: Any) -> None:
    """Refuse printf-style widths or precisions that would allocate huge strings."""
    if not isinstance(fmt, str):
        return
    star = False
    for match in _PRINTF_SPEC.finditer(fmt):
        for group in match.groups():
            if group == "*":
                star = True
            elif group and (len(group) > 7 or int(group) > MAX_VALUE_SIZE):
                raise LimitError(f"a format width or precision above {MAX_VALUE_SIZE:,} is not allowed")
    if star:
        values = args.values() if isinstance(args, dict) else args if isinstance(args, tuple) else (args,)
        for value in values:
            check_number_arg(value, "a format width")


def _check_multiply(left: Any, right: Any) -> None:
    for seq, count in ((left, right), (right, left)):
        if isinstance(seq, str | list | tuple) and isinstance(count, int):
            if count > 0 and len(seq) > 0:
                check_size(len(seq) * count, "repeating a sequence")
            return
    if isinstance(left, int) and isinstance(right, int) and left.bit_length() + right.bit_length() > MAX_INT_BITS:
        raise LimitError(f"the product is larger than {MAX_INT_BITS} bits")


def _check_power(base: Any, exponent: Any) -> None:
    big = isinstance(base, int) and isinstance(exponent, int) and exponent > 0 and abs(base) > 1
    if big and base.bit_length() * exponent > MAX_INT_BITS:
        raise LimitError(f"the power is larger than {MAX_INT_BITS} bits")


def check_binop(operator: str, left: Any, right: Any) -> None:
    if operator == "*":
        _check_multiply(left, right)
    elif operator == "**":
        _check_power(left, right)
    elif operator == "+" and isinstance(left, str | list | tuple) and isinstance(right, str | list | tuple):
        check_size(len(left) + len(right), "adding two sequences")
    elif operator == "%":
        check_printf(left, right)
