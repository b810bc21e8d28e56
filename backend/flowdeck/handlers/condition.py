"""``condition``: the first branch whose expression is truthy names the handle taken; else ``else``."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from flowdeck.domain.errors import ConfigIssue, NodeError
from flowdeck.handlers.base import HandlerResult, NodeHandler, NodeHelpers, entries_with
from flowdeck.sandbox.templates import TemplateError, evaluate, expression_issues

__all__ = ("ConditionHandler",)

_BRANCH_ID = re.compile(r"^[A-Za-z0-9_-]{1,64}$")


class ConditionHandler(NodeHandler):
    type_name = "condition"
    confined = True

    def output_handles(self, config: Mapping[str, Any]) -> tuple[str, ...]:
        return (*(branch_id for _, branch_id in entries_with(config, "branches", "id")), "else")

    def expressions(self, config: Mapping[str, Any]) -> list[tuple[str, str]]:
        found = entries_with(config, "branches", "expression")
        return [(f"config.branches[{index}].expression", expression) for index, expression in found]

    def config_issues(self, config: Mapping[str, Any]) -> list[ConfigIssue]:
        branches = config.get("branches")
        if not isinstance(branches, list) or not branches:
            return [ConfigIssue("config.branches", "a condition needs a non-empty list of branches")]
        issues: list[ConfigIssue] = []
        seen: set[str] = set()
        for index, branch in enumerate(branches):
            path = f"config.branches[{index}]"
            if not isinstance(branch, dict):
                issues.append(ConfigIssue(path, "a branch must be an object {id, label, expression}"))
                continue
            branch_id = branch.get("id")
            if not isinstance(branch_id, str) or not _BRANCH_ID.match(branch_id):
                issues.append(ConfigIssue(f"{path}.id", "a branch id is 1-64 characters of A-Z a-z 0-9 _ -"))
            elif branch_id == "else" or branch_id in seen:
                issues.append(ConfigIssue(f"{path}.id", f"branch id '{branch_id}' is used twice (or is 'else')"))
            else:
                seen.add(branch_id)
            expression = branch.get("expression")
            if not isinstance(expression, str) or not expression.strip():
                issues.append(ConfigIssue(f"{path}.expression", "a branch needs an expression"))
            else:
                issues.extend(expression_issues(expression, f"{path}.expression"))
        return issues

    async def execute(
        self, config: Mapping[str, Any], context: Mapping[str, Any], helpers: NodeHelpers
    ) -> HandlerResult:
        for branch in config["branches"]:
            try:
                value = evaluate(branch["expression"], context)
            except TemplateError as exc:
                raise NodeError(f"branch '{branch['id']}': {exc.message}", retryable=False) from exc
            if value:
                return HandlerResult(output={"branch": branch["id"]}, next_handle=branch["id"])
        return HandlerResult(output={"branch": "else"}, next_handle="else")
