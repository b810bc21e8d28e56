"""The one path of checks a workflow definition meets: on create, save, test run and ``/validate``.

``/validate`` answers exactly what saving the same body would: it reads the body as the same type
(``WorkflowCreate``, unknown fields included), then runs the same checks; save and test run refuse on
any error that ``/validate`` lists. A body that does not fit the type is one problem naming the field
(msgspec stops at the first), as the 400 of create names it.
"""

from __future__ import annotations

import re
from typing import Any, Final

import msgspec

from flowdeck.api.inputs import json_problems
from flowdeck.api.schemas import DefinitionFields, WorkflowCreate
from flowdeck.domain.problems import Problem, has_errors
from flowdeck.engine.engine import DefinitionInvalidError, Engine
from flowdeck.notifications.notifier import Notifier
from flowdeck.notifications.targets import shape_problems

__all__ = ("SaveChecks", "definition_of", "read_body")

_AT: Final = re.compile(r" - at `\$\.?(?P<path>[^`]*)`$")
_UNKNOWN: Final = re.compile(r"unknown field `(?P<name>[^`]*)`")


def definition_of(body: DefinitionFields) -> dict[str, Any]:
    """The definition JSON a body describes (only the fields that were given)."""
    definition: dict[str, Any] = {"nodes": body.nodes, "edges": body.edges}
    for key in ("title", "description", "options", "notes"):
        value = getattr(body, key)
        if value is not None:
            definition[key] = value
    return definition


def _body_problem(exc: msgspec.ValidationError) -> Problem:
    message = str(exc)
    at = _AT.search(message)
    path = at.group("path") if at else ""
    unknown = _UNKNOWN.search(message)
    if unknown:
        path = f"{path}.{unknown.group('name')}" if path else unknown.group("name")
    return Problem("invalid_field", f"{path or 'the body'}: {message}", path=path or None)


def read_body(raw: Any) -> tuple[WorkflowCreate | None, list[Problem]]:
    """``raw`` read as the body of create; else the problem naming the field (what create's 400 names)."""
    try:
        return msgspec.convert(raw, WorkflowCreate), []
    except msgspec.ValidationError as exc:
        return None, [_body_problem(exc)]


class SaveChecks:
    def __init__(self, engine: Engine, notifier: Notifier) -> None:
        self.engine = engine
        self.notifier = notifier

    async def problems(
        self, tenant_id: str, definition: dict[str, Any], own_id: str | None = None, raw_size: int | None = None
    ) -> list[Problem]:
        """Every problem of ``definition`` (errors and warnings); ``own_id``: the saved workflow it is an edit
        of (a node that calls it gets a warning)."""
        fields = {k: definition.get(k) for k in ("nodes", "edges", "options", "notes")}
        problems = [p for name, value in fields.items() for p in json_problems(value, name)]
        if problems:  # what a database cannot hold is not analysed further
            return problems
        problems = self.engine.validate(definition, raw_size=raw_size)
        if has_errors(problems):
            return problems
        problems += await self.engine.call_problems(tenant_id, definition, own_id)
        problems += await self._tenant_problems(tenant_id, definition)
        options = definition.get("options")
        if isinstance(options, dict) and not shape_problems(options):
            problems += await self.notifier.target_problems(tenant_id, definition)
        return problems

    async def _tenant_problems(self, tenant_id: str, definition: dict[str, Any]) -> list[Problem]:
        """Each node's ``tenant_issues`` (the objects its config names must be the tenant's)."""
        problems = []
        for raw in definition.get("nodes") or []:
            handler = self.engine.registry.get(str(raw.get("type"))) if isinstance(raw, dict) else None
            if handler is None or not isinstance(raw.get("config"), dict):
                continue
            for issue in await handler.tenant_issues(tenant_id, raw["config"]):
                message = f"node '{raw['id']}': {issue.path}: {issue.message}"
                problems.append(Problem("invalid_config", message, node_id=raw["id"], path=issue.path))
        return problems

    async def require(self, tenant_id: str, definition: dict[str, Any], own_id: str | None = None) -> None:
        """Raise ``DefinitionInvalidError`` (a 400 listing every problem) unless ``definition`` may be saved."""
        problems = await self.problems(tenant_id, definition, own_id)
        if has_errors(problems):
            raise DefinitionInvalidError(problems)
