"""A switch case's ``matches``: a regular expression, checked on save and matched within a time budget.

Python's ``re`` backtracks, so a hostile pattern (``(a+)+$``, ``a*a*a*b``) can take exponential or high
polynomial time. Three guards: the pattern is at most ``MAX_PATTERN_CHARS`` and may not nest an unbounded
quantifier in another (the classic catastrophic form, refused on save); the value matched is at most
``MAX_SUBJECT_CHARS``; and every search runs under a CPU-time budget of ``REGEX_BUDGET_SECONDS``.

The budget is a ``SIGPROF`` interval timer (``ITIMER_PROF``: the process's CPU time): CPython's regex
engine polls for signals while it backtracks, so the handler's exception stops it. CPU time, not the
wall clock, so that a process that is stopped or starved of a core (a loaded machine, ``SIGSTOP``) does
not fail a search that did not run long; other threads' CPU time counts too (the process's), so the
budget is at worst shared with them. Signals reach only the main thread, where the engine's event loop
runs; a search from any other thread is refused rather than run unbounded. A timer set by someone else
is put back with the time it had left.
"""

from __future__ import annotations

import functools
import re
import signal
import threading
import time
from re import _parser  # type: ignore[attr-defined]  # the parsed form shows how quantifiers nest
from typing import Any, Final

from flowdeck.domain.errors import NodeError

__all__ = (
    "MAX_PATTERN_CHARS",
    "MAX_SUBJECT_CHARS",
    "REGEX_BUDGET_SECONDS",
    "compile_pattern",
    "pattern_problem",
    "search_within_budget",
)

MAX_PATTERN_CHARS: Final = 1_000
MAX_SUBJECT_CHARS: Final = 100_000
REGEX_BUDGET_SECONDS: Final = 0.25

_UNBOUNDED: Final = 100  # a repeat allowing more than this many counts as unbounded when nested


class _OverBudgetError(Exception):
    pass


def _raise_over_budget(signum: int, frame: Any) -> None:
    raise _OverBudgetError


@functools.lru_cache(maxsize=256)
def compile_pattern(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern)


def _nested_repeat(items: Any, inside_repeat: bool) -> bool:
    """Does a parsed pattern repeat (more than ``_UNBOUNDED`` times) something that itself repeats?"""
    for op, arg in items:
        name = str(op)
        if name in ("MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT"):
            _low, high, body = arg
            unbounded = high > _UNBOUNDED
            if unbounded and inside_repeat:
                return True
            if _nested_repeat(body, inside_repeat or unbounded):
                return True
        elif name == "SUBPATTERN":
            if _nested_repeat(arg[-1], inside_repeat):
                return True
        elif name == "BRANCH":
            if any(_nested_repeat(alt, inside_repeat) for alt in arg[1]):
                return True
        elif name in ("ASSERT", "ASSERT_NOT") and _nested_repeat(arg[1], inside_repeat):
            return True
    return False


def pattern_problem(pattern: Any) -> str | None:
    """Why ``pattern`` may not be a switch case's ``matches``, or ``None`` when it may."""
    if not isinstance(pattern, str) or not pattern:
        return "'matches' must be a non-empty regular expression"
    if len(pattern) > MAX_PATTERN_CHARS:
        return f"the regular expression is {len(pattern):,} characters; the limit is {MAX_PATTERN_CHARS:,}"
    try:
        compile_pattern(pattern)
    except re.error as exc:
        return f"not a valid regular expression: {exc}"
    if _nested_repeat(_parser.parse(pattern), False):
        return (
            "a quantifier inside a repeated group (like (a+)+ or (x*)*) can take exponential time;"
            " rewrite it without the nested repetition"
        )
    return None


def search_within_budget(pattern: str, text: str, path: str) -> bool:
    """``re.search(pattern, text) is not None``, failing the node past the budget or the size limit."""
    if len(text) > MAX_SUBJECT_CHARS:
        message = f"{path}: the value is {len(text):,} characters; a regular expression is matched"
        raise NodeError(f"{message} against at most {MAX_SUBJECT_CHARS:,}", retryable=False)
    compiled = compile_pattern(pattern)
    if threading.current_thread() is not threading.main_thread():
        raise NodeError(f"{path}: a regular expression can only be matched on the main thread", retryable=False)
    previous = signal.signal(signal.SIGPROF, _raise_over_budget)
    old_delay, old_interval = signal.setitimer(signal.ITIMER_PROF, REGEX_BUDGET_SECONDS)
    started = time.process_time()
    try:
        return compiled.search(text) is not None
    except _OverBudgetError:
        message = f"{path}: the regular expression took more than {REGEX_BUDGET_SECONDS:g} s of CPU time"
        raise NodeError(f"{message} on a value of {len(text):,} characters", retryable=False) from None
    finally:
        signal.setitimer(signal.ITIMER_PROF, 0)
        signal.signal(signal.SIGPROF, previous)
        if old_delay > 0:
            left = max(old_delay - (time.process_time() - started), 0.001)
            signal.setitimer(signal.ITIMER_PROF, left, old_interval)
