"""``switch``: the first case that holds for ``value`` names the handle taken; else ``default``.

A case has a ``handle`` and exactly one matcher: ``equals`` (the value equals this JSON value), ``in`` (the
value is one of a list), ``matches`` (the value, as text, contains a match of a regular expression) or
``expression`` (a sandboxed expression over ``ctx`` and ``value``, truthy as a condition branch's). The
handles not taken are resolved as not taken, exactly like a condition's other branches (SPEC §2).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Final

from flowdeck.domain.errors import ConfigIssue, NodeError
from flowdeck.handlers.base import HandlerResult, NodeHandler, NodeHelpers, entries_with
from flowdeck.handlers.switch_regex import pattern_problem, search_within_budget
from flowdeck.sandbox.templates import TemplateError, evaluate, expression_issues

__all__ = ("MATCHERS", "SwitchHandler")

_HANDLE: Final = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
MATCHERS: Final = ("equals", "in", "matches", "expression")
_VALUE_NAME: Final = frozenset({"value"})


def _same(a: Any, b: Any) -> bool:
    """JSON equality: ``1 == 1.0``, but ``True`` is not ``1`` and ``"1"`` is not ``1``."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(a, int | float) and isinstance(b, int | float):
        return a == b
    if type(a) is not type(b):
        return False
    if isinstance(a, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    return bool(a == b)


def _as_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    return "" if value is None else str(value)


class SwitchHandler(NodeHandler):
    type_name = "switch"
    confined = True
    template_fields = ("value",)

    def output_handles(self, config: Mapping[str, Any]) -> tuple[str, ...]:
        return (*dict.fromkeys(handle for _, handle in entries_with(config, "cases", "handle")), "default")

    def expressions(self, config: Mapping[str, Any]) -> list[tuple[str, str]]:
        found = entries_with(config, "cases", "expression")
        return [(f"config.cases[{index}].expression", expression) for index, expression in found]

    def config_issues(self, config: Mapping[str, Any]) -> list[ConfigIssue]:
        issues: list[ConfigIssue] = []
        if "value" not in config:
            issues.append(ConfigIssue("config.value", "a switch needs a value (a template, e.g. {{ ctx.input.kind }})"))
        cases = config.get("cases")
        if not isinstance(cases, list) or not cases:
            issues.append(ConfigIssue("config.cases", "a switch needs a non-empty list of cases"))
            return issues
        seen: set[str] = set()
        for index, case in enumerate(cases):
            path = f"config.cases[{index}]"
            if not isinstance(case, dict):
                issues.append(ConfigIssue(path, f"a case must be an object {{handle, {' | '.join(MATCHERS)}}}"))
                continue
            handle = case.get("handle")
            if not isinstance(handle, str) or not _HANDLE.match(handle):
                issues.append(ConfigIssue(f"{path}.handle", "a case handle is 1-64 characters of A-Z a-z 0-9 _ -"))
            elif handle == "default" or handle in seen:
                issues.append(ConfigIssue(f"{path}.handle", f"case handle '{handle}' is used twice (or is 'default')"))
            else:
                seen.add(handle)
            issues.extend(self._matcher_issues(case, path))
        return issues

    @staticmethod
    def _matcher_issues(case: Mapping[str, Any], path: str) -> list[ConfigIssue]:
        present = [name for name in MATCHERS if name in case]
        unknown = sorted(set(case) - {"handle", *MATCHERS})
        issues = [ConfigIssue(f"{path}.{name}", f"unknown case field '{name}'") for name in unknown]
        if len(present) != 1:
            found = ", ".join(present) or "none"
            message = f"a case needs exactly one of {', '.join(MATCHERS)} (it has {found})"
            return [*issues, ConfigIssue(path, message)]
        matcher = present[0]
        value = case[matcher]
        if matcher == "in" and not isinstance(value, list):
            issues.append(ConfigIssue(f"{path}.in", "'in' must be a list of values"))
        elif matcher == "matches":
            problem = pattern_problem(value)
            if problem is not None:
                issues.append(ConfigIssue(f"{path}.matches", problem))
        elif matcher == "expression":
            if not isinstance(value, str) or not value.strip():
                issues.append(ConfigIssue(f"{path}.expression", "an expression must be a non-empty string"))
            else:
                issues.extend(expression_issues(value, f"{path}.expression", _VALUE_NAME))
        return issues

    async def execute(
        self, config: Mapping[str, Any], context: Mapping[str, Any], helpers: NodeHelpers
    ) -> HandlerResult:
        value = config.get("value")
        for index, case in enumerate(config["cases"]):
            if self._holds(case, value, context, f"config.cases[{index}]"):
                return HandlerResult(output={"handle": case["handle"], "value": value}, next_handle=case["handle"])
        return HandlerResult(output={"handle": "default", "value": value}, next_handle="default")

    @staticmethod
    def _holds(case: Mapping[str, Any], value: Any, context: Mapping[str, Any], path: str) -> bool:
        if "equals" in case:
            return _same(value, case["equals"])
        if "in" in case:
            return any(_same(value, option) for option in case["in"])
        if "matches" in case:
            return search_within_budget(case["matches"], _as_text(value), f"{path}.matches")
        try:
            return bool(evaluate(case["expression"], context, {"value": value}))
        except TemplateError as exc:
            raise NodeError(f"{path}.expression: {exc.message}", retryable=False) from exc
