"""Log set-up for the ``flowdeck`` commands: text for people, or one JSON object per line for collectors.

JSON lines carry ``runId``, ``nodeId`` and ``iteration`` when the line was written while a node ran
(``engine.log_scope``), so a log search for a run finds what its nodes logged.
"""

from __future__ import annotations

import logging
from typing import Any

from pythonjsonlogger.json import JsonFormatter

from flowdeck.engine.log_scope import current_node

__all__ = ("NodeScopeFilter", "configure_logging")

TEXT_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


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


def configure_logging(*, level: int = logging.INFO, log_format: str = "text") -> None:
    handler = logging.StreamHandler()
    handler.addFilter(NodeScopeFilter())
    handler.setFormatter(_json_formatter() if log_format == "json" else logging.Formatter(TEXT_FORMAT))
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(level)


def uvicorn_log_config(log_format: str) -> dict[str, Any] | None:
    """uvicorn's own loggers go through the root handler above (None: uvicorn's default set-up)."""
    if log_format != "json":
        return None
    return {"version": 1, "disable_existing_loggers": False, "loggers": {"uvicorn": {"propagate": True}}}
