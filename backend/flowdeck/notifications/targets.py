"""Where a run's failure or SLA breach is announced: ``options.onFailure`` / ``options.onSlaBreach``."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final

from flowdeck.domain.problems import Problem
from flowdeck.outbound.urls import URLRefusedError, parse_url
from flowdeck.storage.notices import FAILURE, SLA_BREACH

__all__ = ("OPTION_OF_EVENT", "Target", "shape_problems", "target_of", "urls_of")

OPTION_OF_EVENT: Final = {FAILURE: "onFailure", SLA_BREACH: "onSlaBreach"}


@dataclass(frozen=True, slots=True)
class Target:
    workflow_id: str | None
    url: str | None


def _options(definition: Any) -> dict[str, Any]:
    options = definition.get("options") if isinstance(definition, dict) else None
    return options if isinstance(options, dict) else {}


def target_of(definition: Any, event: str) -> Target | None:
    raw = _options(definition).get(OPTION_OF_EVENT.get(event, ""))
    if not isinstance(raw, dict):
        return None
    workflow_id, url = raw.get("workflowId") or None, raw.get("url") or None
    if workflow_id is None and url is None:
        return None
    return Target(workflow_id if isinstance(workflow_id, str) else None, url if isinstance(url, str) else None)


def urls_of(definition: Any) -> list[tuple[str, str]]:
    """(field path, URL) of every notification URL the definition names."""
    found = []
    for event, option in OPTION_OF_EVENT.items():
        target = target_of(definition, event)
        if target is not None and target.url:
            found.append((f"options.{option}.url", target.url))
    return found


def _bad(path: str, message: str) -> Problem:
    return Problem("invalid_notification", f"{path}: {message}", path=path)


def shape_problems(options: dict[str, Any]) -> list[Problem]:
    """The form of both options (no lookups: whether the workflow exists is checked on save)."""
    problems = []
    for option in OPTION_OF_EVENT.values():
        raw = options.get(option)
        if raw is None:
            continue
        path = f"options.{option}"
        if not isinstance(raw, dict):
            problems.append(_bad(path, "expected an object {workflowId?, url?}"))
            continue
        for key in sorted(set(raw) - {"workflowId", "url"}):
            problems.append(_bad(f"{path}.{key}", "unknown field (expected workflowId and/or url)"))
        workflow_id = raw.get("workflowId")
        if workflow_id is not None and (not isinstance(workflow_id, str) or len(workflow_id) > 64):
            problems.append(_bad(f"{path}.workflowId", "expected a workflow id"))
        url = raw.get("url")
        if url is not None and url != "":
            try:
                parse_url(url)
            except URLRefusedError as exc:
                problems.append(_bad(f"{path}.url", f"the URL {exc}"))
    return problems
