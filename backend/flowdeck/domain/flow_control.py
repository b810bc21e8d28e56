"""Flow control on a workflow (SPEC §2 "Edges, skipping, joins, completion"): how many of its runs may run at
once per key (``options.concurrency``), runs collapsed while they keep coming (``options.debounce``) and the
order queued runs are taken in (``options.priority``, also per run on ``POST …/runs``).

The rules about ranges live here; the templates of ``key`` are checked by validation (sandbox syntax) and
rendered over the run input when a run starts (engine/flow_control.py)."""

from __future__ import annotations

from typing import Any, Final, Literal

import msgspec

from flowdeck.domain.problems import Problem

__all__ = (
    "DEFAULT_PRIORITY",
    "MAX_CONCURRENCY_LIMIT",
    "MAX_DEBOUNCE_SECONDS",
    "MAX_PRIORITY",
    "MIN_PRIORITY",
    "STRATEGIES",
    "ConcurrencyOptions",
    "DebounceOptions",
    "aged_at",
    "flow_control_problems",
    "priority_problem",
)

DEFAULT_PRIORITY: Final = 50
MIN_PRIORITY: Final = 1
MAX_PRIORITY: Final = 100
MAX_CONCURRENCY_LIMIT: Final = 10_000
MAX_DEBOUNCE_SECONDS: Final = 7 * 24 * 3600
MAX_KEY_CHARS: Final = 1000
"""The longest key template; a rendered key longer than ``MAX_GROUP_CHARS`` is kept as its sha256."""
MAX_GROUP_CHARS: Final = 200

Strategy = Literal["queue", "cancel_in_progress", "cancel_newest"]
STRATEGIES: Final = ("queue", "cancel_in_progress", "cancel_newest")


class ConcurrencyOptions(msgspec.Struct, frozen=True, rename="camel"):
    limit: int
    key: str | None = None
    strategy: Strategy = "queue"


class DebounceOptions(msgspec.Struct, frozen=True, rename="camel"):
    seconds: float
    key: str | None = None


def aged_at(at: Any, priority: Any, step_seconds: Any) -> Any:
    """The one aging rule of every queue (flow-control runs and node jobs alike): the time to order by,
    ascending. ``at`` (when it became ready) moves ``step_seconds`` earlier per point of ``priority`` above
    50 (and later below), so effective priority = priority + age / step_seconds: a higher priority goes
    first, yet a lower one that became ready more than the difference of their lifts earlier goes before
    it, so none waits for ever (FLOWDECK_PRIORITY_STEP_SECONDS). Plain arithmetic: it builds the SQL
    expression from columns (storage/flow.py, storage/statements.py) and the number from floats."""
    return at - (priority - DEFAULT_PRIORITY) * step_seconds


def _int_in(value: Any, low: int, high: int) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and low <= value <= high


def _number_above_zero(value: Any, high: float) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and 0 < value <= high


def _bad(path: str, expected: str, value: Any) -> Problem:
    shown = msgspec.json.encode(value).decode()[:80] if value is not None else "null"
    return Problem("invalid_field", f"the workflow: {path} must be {expected}, not {shown}", path=path)


def priority_problem(value: Any, path: str = "priority") -> Problem | None:
    """A priority must be a whole number from 1 to 100 (higher is taken first)."""
    if _int_in(value, MIN_PRIORITY, MAX_PRIORITY):
        return None
    return _bad(path, f"a whole number from {MIN_PRIORITY} to {MAX_PRIORITY}", value)


def _key_problem(key: Any, path: str) -> Problem | None:
    if key is None or (isinstance(key, str) and 0 < len(key) <= MAX_KEY_CHARS):
        return None
    return _bad(path, f"a template of 1 to {MAX_KEY_CHARS} characters over the run input", key)


def flow_control_problems(options: dict[str, Any]) -> list[Problem]:
    """The range problems of ``options.concurrency``, ``options.debounce`` and ``options.priority``."""
    problems: list[Problem | None] = []
    concurrency = options.get("concurrency")
    if concurrency is not None:
        if not isinstance(concurrency, dict):
            problems.append(_bad("options.concurrency", "an object {limit, key?, strategy?}", concurrency))
        else:
            for unknown in sorted(set(concurrency) - {"limit", "key", "strategy"}):
                problems.append(_bad(f"options.concurrency.{unknown}", "absent (limit, key, strategy)", unknown))
            limit = concurrency.get("limit")
            if not _int_in(limit, 1, MAX_CONCURRENCY_LIMIT):
                problems.append(
                    _bad("options.concurrency.limit", f"a whole number from 1 to {MAX_CONCURRENCY_LIMIT:,}", limit)
                )
            strategy = concurrency.get("strategy", "queue")
            if strategy not in STRATEGIES:
                problems.append(_bad("options.concurrency.strategy", " or ".join(map(repr, STRATEGIES)), strategy))
            problems.append(_key_problem(concurrency.get("key"), "options.concurrency.key"))
    debounce = options.get("debounce")
    if debounce is not None:
        if not isinstance(debounce, dict):
            problems.append(_bad("options.debounce", "an object {seconds, key?}", debounce))
        else:
            for unknown in sorted(set(debounce) - {"seconds", "key"}):
                problems.append(_bad(f"options.debounce.{unknown}", "absent (seconds, key)", unknown))
            seconds = debounce.get("seconds")
            if not _number_above_zero(seconds, MAX_DEBOUNCE_SECONDS):
                problems.append(
                    _bad("options.debounce.seconds", f"a number above 0 and at most {MAX_DEBOUNCE_SECONDS:,}", seconds)
                )
            problems.append(_key_problem(debounce.get("key"), "options.debounce.key"))
    if "priority" in options:
        problems.append(priority_problem(options["priority"], "options.priority"))
    return [p for p in problems if p is not None]
