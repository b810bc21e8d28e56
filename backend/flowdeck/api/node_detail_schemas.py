"""``GET /api/runs/{id}/nodes/{nodeId}``: one node of a run as the node details view shows it."""

from __future__ import annotations

from typing import Any

from flowdeck.api.schemas import Camel, OutputTruncatedOut
from flowdeck.domain.statuses import NodeStatus

__all__ = ("AttemptOut", "ContextValueTruncatedOut", "NodeDetailOut")


class AttemptOut(Camel):
    attempt: int
    """Counted over the whole run, from 1 (a partial retry goes on counting)."""
    status: NodeStatus
    started_at: float | None
    completed_at: float | None
    worker_id: str | None = None
    error: str | None = None
    retry: int = 0
    """How many partial retries of the run came before this attempt (0: the run's first try)."""
    attempt_in_retry: int = 0
    """Its number within that retry, as the run view and the timeline count it."""


class ContextValueTruncatedOut(Camel):
    """A context value too large to show in full; its value is ``null`` beside it."""

    bytes: int
    preview: str
    href: str | None = None
    """Where the output it came from is read in full (none for the run input)."""


class NodeDetailOut(Camel):
    node_id: str
    iteration: str
    """The loop iteration shown (``""`` at top level)."""
    attempt: int
    """The attempt shown (0: the node never started in this scope)."""
    status: NodeStatus
    attempts: list[AttemptOut]
    """Every attempt in this scope, in the order they began."""
    input: dict[str, Any]
    """The context the attempt started with (``input``, ``loop``, the upstream outputs, ``run``), folded
    from the rows logged before it: what its templates and code read."""
    reads: list[str] | None
    """The top-level ``ctx`` names its config (templates, expressions, code) reads; ``null``: its code
    could read any."""
    config: dict[str, Any]
    """The node's config as the run has it (its version, or the test run's graph)."""
    input_truncated: dict[str, ContextValueTruncatedOut] | None = None
    """Context values too large to show (their value is ``null`` in ``input``)."""
    output: Any = None
    output_truncated: OutputTruncatedOut | None = None
    error: str | None = None
    logs: str | None = None
    pinned: bool = False
