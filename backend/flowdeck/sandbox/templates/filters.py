"""Jinja2's filters, made safe: the ones that can grow a value check the size first, all check the budget."""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Iterator
from typing import Any, Final

from jinja2 import nodes
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
from jinja2.nodes import EvalContext
from jinja2.utils import pass_environment, pass_eval_context
from markupsafe import Markup

from flowdeck.sandbox.templates.budget import (
    MAX_JSON_INDENT,
    LimitError,
    account_for,
    check_number_arg,
    check_printf,
    check_size,
    current_guard,
    materialize,
)

__all__ = ("FILTER_REPLACEMENTS", "with_budget")


def _check_positive_count(value: Any, what: str) -> None:
    if not isinstance(value, int) or value < 1:
        raise LimitError(f"{what} must be a positive whole number")
    check_number_arg(value, what)


def _center(value: Any, width: int = 80) -> str:
    check_number_arg(width, "the |center width")
    return do_center(value, width)


def _indent(s: Any, width: int | str = 4, first: bool = False, blank: bool = False) -> str:
    text = str(s)
    step = len(width) if isinstance(width, str) else width if isinstance(width, int) else 0
    check_size(len(text) + (text.count("\n") + 1) * max(step, 0), "|indent")
    return do_indent(text, width, first, blank)


@pass_environment
def _wordwrap(environment: Any, s: Any, width: int = 79, break_long_words: bool = True,
              wrapstring: str | None = None, break_on_hyphens: bool = True) -> str:  # fmt: skip
    text = str(s)
    check_size(len(text) + (len(text) + 1) * len(str(wrapstring or "\n")), "|wordwrap")
    return do_wordwrap(environment, text, width, break_long_words, wrapstring, break_on_hyphens)


def _format(value: Any, *args: Any, **kwargs: Any) -> str:
    check_printf(value, kwargs or args)
    return do_format(value, *args, **kwargs)


@pass_eval_context
def _join(eval_ctx: EvalContext, value: Iterable[Any], d: str = "", attribute: str | int | None = None) -> str:
    items = materialize(value, current_guard())
    check_size(max(len(items) - 1, 0) * len(str(d)), "|join")
    return sync_do_join(eval_ctx, items, d, attribute)


@pass_eval_context
def _replace(eval_ctx: EvalContext, s: Any, old: Any, new: Any, count: int | None = None) -> str:
    text, old_text, new_text = str(s), str(old), str(new)
    found = text.count(old_text) if old_text else len(text) + 1
    if count is not None and count >= 0:
        found = min(found, count)
    check_size(len(text) + found * max(len(new_text) - len(old_text), 0), "|replace")
    return do_replace(eval_ctx, s, old, new, count)


def _batch(value: Iterable[Any], linecount: int, fill_with: Any = None) -> Iterator[list[Any]]:
    _check_positive_count(linecount, "the |batch size")
    return do_batch(value, linecount, fill_with)


def _slice(value: Any, slices: int, fill_with: Any = None) -> Iterator[list[Any]]:
    _check_positive_count(slices, "the |slice count")
    current_guard().charge(slices)
    return sync_do_slice(value, slices, fill_with)


@pass_environment
def _sum(environment: Any, iterable: Iterable[Any], attribute: str | int | None = None, start: Any = 0) -> Any:
    if isinstance(start, bool) or not isinstance(start, int | float):
        raise LimitError("|sum adds numbers only (start must be a number)")
    return sync_do_sum(environment, iterable, attribute, start)


@pass_eval_context
def _tojson(eval_ctx: EvalContext, value: Any, indent: int | None = None) -> Markup:
    if indent is not None and not (isinstance(indent, int) and 0 <= indent <= MAX_JSON_INDENT):
        raise LimitError(f"the |tojson indent must be a number from 0 to {MAX_JSON_INDENT}")
    return do_tojson(eval_ctx, value, indent)


FILTER_REPLACEMENTS: Final[dict[str, Callable[..., Any]]] = {
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


def with_budget(func: Callable[..., Any], *, account: bool) -> Callable[..., Any]:
    """Wrap a filter or test: check the deadline before, charge the result after (keeps ``jinja_pass_arg``)."""

    @functools.wraps(func)
    def budgeted(*args: Any, **kwargs: Any) -> Any:
        guard = current_guard()
        if guard.compiling:
            raise nodes.Impossible  # no constant folding: it would embed big results in the code
        guard.tick()
        result = func(*args, **kwargs)
        return account_for(result, guard) if account else result

    return budgeted
