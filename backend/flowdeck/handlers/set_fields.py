"""``set``: builds an object from named fields (values are templates, native types kept), optionally on
top of the previous node's output (``keepInput``).

Names are dotted paths: ``customer.name`` sets the key ``name`` of the object under ``customer``, creating
it (or replacing a value that is not an object). Fields apply in order, so a later field overwrites an
earlier one it overlaps. Two fields with the same name are refused on save.

The previous node is the source of the edge that led here: of the node's incoming edges, in the
definition's order, the first whose source completed in this run (in this loop iteration). A source
that was skipped or not reached is passed over, so after a switch or condition the branch taken gives
the base. With ``keepInput`` the base is a deep copy of that output, which must be an object; with
no completed source (the first node of a loop body) the base is ``ctx.loop.item`` when it is one.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Mapping
from typing import Any, Final

from flowdeck.domain.errors import ConfigIssue, NodeError
from flowdeck.handlers.base import HandlerResult, NodeHandler, NodeHelpers

__all__ = ("SetHandler",)

_NAME: Final = re.compile(r"^[^.\s{}][^.{}]{0,63}(\.[^.\s{}][^.{}]{0,63}){0,15}$")
_NAME_RULE: Final = "a field name is up to 16 dot-separated keys, each 1-64 characters, without { } (customer.name)"


def _place(target: dict[str, Any], name: str, value: Any) -> None:
    *parents, last = name.split(".")
    for key in parents:
        child = target.get(key)
        if not isinstance(child, dict):
            child = target[key] = {}
        target = child
    target[last] = value


class SetHandler(NodeHandler):
    type_name = "set"
    confined = True
    handles = ("success",)
    template_fields = ("fields",)

    def config_issues(self, config: Mapping[str, Any]) -> list[ConfigIssue]:
        issues: list[ConfigIssue] = []
        keep = config.get("keepInput", False)
        if not isinstance(keep, bool):
            issues.append(ConfigIssue("config.keepInput", "keepInput must be true or false"))
        fields = config.get("fields", [])
        if not isinstance(fields, list):
            return [*issues, ConfigIssue("config.fields", "fields must be a list of {name, value}")]
        seen: set[str] = set()
        for index, field in enumerate(fields):
            path = f"config.fields[{index}]"
            if not isinstance(field, dict):
                issues.append(ConfigIssue(path, "a field must be an object {name, value}"))
                continue
            name = field.get("name")
            if not isinstance(name, str) or not _NAME.match(name):
                issues.append(ConfigIssue(f"{path}.name", _NAME_RULE))
            elif name in seen:
                issues.append(ConfigIssue(f"{path}.name", f"the field '{name}' is set twice"))
            else:
                seen.add(name)
            if "value" not in field:
                issues.append(ConfigIssue(f"{path}.value", "a field needs a value (a template or any JSON value)"))
            extra = sorted(field.keys() - {"name", "value"})
            issues.extend(ConfigIssue(f"{path}.{key}", f"unknown field key '{key}'") for key in extra)
        return issues

    async def execute(
        self, config: Mapping[str, Any], context: Mapping[str, Any], helpers: NodeHelpers
    ) -> HandlerResult:
        output = self._base(context, helpers) if config.get("keepInput") else {}
        for field in config.get("fields") or []:
            _place(output, field["name"], field["value"])
        return HandlerResult(output=output, next_handle="success")

    @staticmethod
    def _base(context: Mapping[str, Any], helpers: NodeHelpers) -> dict[str, Any]:
        for node_id, variable in helpers.previous:
            if context.get(f"__node_{node_id}"):
                base, where = context.get(variable), f"the output of '{node_id}' (ctx.{variable})"
                break
        else:
            loop = context.get("loop")
            if not isinstance(loop, dict):
                raise NodeError("keepInput: no node leading here has completed: no input to keep", retryable=False)
            base, where = loop.get("item"), "the loop item (ctx.loop.item)"
        if not isinstance(base, dict):
            kind = "null" if base is None else type(base).__name__
            raise NodeError(f"keepInput: {where} is {kind}, not an object to set fields on", retryable=False)
        return copy.deepcopy(base)
