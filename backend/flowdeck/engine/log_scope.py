"""Which node a log line was written for: the executor sets it per attempt, the log formatter reads it."""

from __future__ import annotations

from contextvars import ContextVar

__all__ = ("NodeScope", "current_node")


NodeScope = tuple[str, str, str]
"""(run id, node id, iteration path)."""

current_node: ContextVar[NodeScope | None] = ContextVar("flowdeck_node", default=None)
"""Set for the rest of the task that runs a node attempt (a chain's task moves it on node by node)."""
