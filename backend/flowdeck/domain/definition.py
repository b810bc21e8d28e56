"""The workflow definition of SPEC §1 as typed, immutable structs (camelCase on the wire).

A definition is validated as raw JSON first (``flowdeck.validation``), so that every problem is
reported at once; only a definition without errors is converted into these structs.
"""

from __future__ import annotations

from typing import Any, Final, Literal

import msgspec

from flowdeck.domain.flow_control import DEFAULT_PRIORITY, ConcurrencyOptions, DebounceOptions

__all__ = (
    "DEFAULT_NODE_TIMEOUT_SECONDS",
    "DEFAULT_RUN_TIMEOUT_SECONDS",
    "MAX_NODE_TIMEOUT_SECONDS",
    "MAX_RUN_TIMEOUT_SECONDS",
    "EdgeSpec",
    "NodeSpec",
    "Position",
    "RetryPolicy",
    "WorkflowDefinition",
    "WorkflowOptions",
    "parse_definition",
)

DEFAULT_NODE_TIMEOUT_SECONDS = 30.0
DEFAULT_RUN_TIMEOUT_SECONDS = 3600.0
MAX_RUN_TIMEOUT_SECONDS: Final = 31 * 24 * 3600
"""``options.timeoutSeconds``: the longest ``delay`` (30 days) fits, with a day for the rest of the run."""
MAX_NODE_TIMEOUT_SECONDS: Final = 24 * 3600
"""A node's ``timeoutSeconds`` while it holds a worker slot (and a sandbox or a connection); a node that
waits parked (``NodeHandler.parks``: a ``workflow`` node's call) may wait up to the run's maximum."""

JoinMode = Literal["all", "any"]
ErrorHandling = Literal["continue", "fail_workflow"]


class Position(msgspec.Struct, frozen=True):
    x: float = 0.0
    y: float = 0.0


class RetryPolicy(msgspec.Struct, frozen=True, rename="camel", forbid_unknown_fields=True):
    max_attempts: int = 3
    backoff_seconds: float = 1.0
    max_backoff_seconds: float = 60.0


class NodeSpec(msgspec.Struct, frozen=True, rename="camel"):
    id: str
    type: str
    label: str | None = None
    position: Position | None = None
    config: dict[str, Any] = msgspec.field(default_factory=dict)
    output_variable: str | None = None
    retry: RetryPolicy | None = None
    timeout_seconds: float | None = None
    join_mode: JoinMode = "all"
    error_handling: ErrorHandling = "continue"

    @property
    def variable(self) -> str:
        """The context key this node's output lands in."""
        return self.output_variable or self.id


class EdgeSpec(msgspec.Struct, frozen=True, rename="camel"):
    id: str
    source: str
    target: str
    source_handle: str | None = None


class WorkflowOptions(msgspec.Struct, frozen=True, rename="camel"):
    timeout_seconds: float = DEFAULT_RUN_TIMEOUT_SECONDS
    sla_seconds: float | None = None
    schedules: list[dict[str, Any]] = msgspec.field(default_factory=list)
    webhook_labels: dict[str, str] = msgspec.field(default_factory=dict)
    """Label name -> a path into a webhook's JSON body (domain/labels.labels_from_body)."""
    concurrency: ConcurrencyOptions | None = None
    debounce: DebounceOptions | None = None
    priority: int = DEFAULT_PRIORITY


class WorkflowDefinition(msgspec.Struct, frozen=True, rename="camel"):
    nodes: list[NodeSpec]
    edges: list[EdgeSpec] = msgspec.field(default_factory=list)
    title: str = ""
    description: str | None = None
    options: WorkflowOptions = msgspec.field(default_factory=WorkflowOptions)


def parse_definition(raw: Any) -> WorkflowDefinition:
    """Convert an already validated JSON definition into structs (raises ``msgspec.ValidationError``)."""
    return msgspec.convert(raw, WorkflowDefinition)
