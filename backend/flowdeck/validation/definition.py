"""Validate a workflow definition as raw JSON (SPEC §1, §2): every problem at once, never an exception.

The input comes straight from a request and may be hostile: any value can have any type. Problems name
the node, edge or field at fault. ``path`` is relative to the node or edge named by ``nodeId``/``edgeId``
(``config.branches[0].id``, ``retry.maxAttempts``) and absolute otherwise (``nodes[3].id``,
``options.timeoutSeconds``). A definition without errors always converts with ``parse_definition``.

Depth is the number of edges on the longest path. A definition far over the size limits (more than
``ANALYSIS_FACTOR`` times) is not analysed beyond those limits, so validation stays cheap.
"""

from __future__ import annotations

import logging
from typing import Any

from flowdeck.domain.problems import Problem
from flowdeck.handlers.registry import HandlerRegistry
from flowdeck.validation.checks import DefinitionChecks

__all__ = ("validate_definition",)

_log = logging.getLogger(__name__)


def validate_definition(raw: Any, registry: HandlerRegistry, *, raw_size: int | None = None) -> list[Problem]:
    """Every problem of a raw JSON definition (errors and warnings); never raises.

    ``raw_size`` is the size in bytes of the request body the definition came from, if known.
    """
    validator = DefinitionChecks(registry)
    try:
        validator.run(raw, raw_size)
    except Exception:  # noqa: BLE001 (never raise on hostile input: a bug is logged and reported)
        _log.exception("validating a workflow definition failed")
        validator.add("invalid_definition", "the definition could not be validated (internal error)")
    return validator.problems
