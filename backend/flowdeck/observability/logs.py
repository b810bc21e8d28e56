"""Log set-up for the ``flowdeck`` commands: text for people, or one JSON object per line for collectors.

JSON lines carry ``runId``, ``nodeId`` and ``iteration`` when the line was written while a node ran
(``engine.log_scope``), so a log search for a run finds what its nodes logged.
"""

from __future__ import annotations

import logging
import sys
from typing import Any

from pythonjsonlogger.json import JsonFormatter

from flowdeck.engine.log_scope import current_node

__all__ = ("NodeScopeFilter", "configure_logging")

TEXT_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
QUIET_FORMAT = "%(levelname)s %(name)s: %(message)s"


class NodeScopeFilter(logging.Filter):
    """Adds the run and node a record was written for (absent outside a node attempt)."""

    def filter(self, record: logging.LogRecord) -> bool:
        scope = current_node.get()
        if scope is not None:
            record.runId, record.nodeId, record.iteration = scope
        return True


def _json_formatter() -> logging.Formatter:
    renamed = {"asctime": "time", "levelname": "level", "name": "logger"}
    return JsonFormatter("%(asctime)s %(levelname)s %(name)s %(message)s", rename_fields=renamed)


def configure_logging(*, verbose: bool = False, log_format: str = "text", notices: tuple[str, ...] = ()) -> None:
    """Quiet by default: warnings and errors on stderr, plus the INFO lines of the ``notices`` loggers
    (bare, one line each: ``database migrated to …``); ``verbose`` shows everything from DEBUG up."""
    structured = log_format == "json"
    root = logging.getLogger()
    _replace_handler(
        root, _json_formatter() if structured else logging.Formatter(TEXT_FORMAT if verbose else QUIET_FORMAT)
    )
    root.setLevel(logging.DEBUG if verbose else logging.WARNING)
    for name in notices:
        logger = logging.getLogger(name)
        if verbose:
            logger.propagate = True
            logger.handlers.clear()
            logger.setLevel(logging.NOTSET)
            continue
        _replace_handler(logger, _json_formatter() if structured else logging.Formatter("%(message)s"))
        logger.setLevel(logging.INFO)
        logger.propagate = False


def _replace_handler(logger: logging.Logger, formatter: logging.Formatter) -> None:
    handler = logging.StreamHandler(sys.stderr)
    handler.addFilter(NodeScopeFilter())
    handler.setFormatter(formatter)
    for old in list(logger.handlers):
        logger.removeHandler(old)
    logger.addHandler(handler)


def uvicorn_log_config(log_format: str) -> dict[str, Any] | None:
    """uvicorn's own loggers go through the root handler above (None: uvicorn's default set-up)."""
    if log_format != "json":
        return None
    return {"version": 1, "disable_existing_loggers": False, "loggers": {"uvicorn": {"propagate": True}}}
