"""The payloads of SPEC §9, exactly as the editor reads them (``instanceID``, ``nodeID``, upper-case statuses).

The ``TypedDict`` of each payload is the one definition of its shape: ``flowdeck generate`` writes the
editor's TypeScript from it (``frontend/src/generated/realtime.ts``), and mypy holds the functions below to it.
"""

from __future__ import annotations

from typing import Annotated, Any, Final, TypedDict

from flowdeck.engine.output_view import ShownOutputs
from flowdeck.engine.publisher import NodeUpdate, RunUpdate
from flowdeck.storage.run_queries import RunView

__all__ = (
    "JOIN_EVENT",
    "LEAVE_EVENT",
    "NODE_EVENT",
    "SLA_BREACH_EVENT",
    "SNAPSHOT_EVENT",
    "STATUS_EVENT",
    "WIDGET_DATA_EVENT",
    "WIDGET_FOLLOW_EVENT",
    "WIDGET_JOIN_EVENT",
    "WORKFLOW_JOIN_EVENT",
    "WORKFLOW_LEAVE_EVENT",
    "WORKFLOW_SAVED_EVENT",
    "NodeMessage",
    "SlaBreachMessage",
    "SnapshotMessage",
    "StatusMessage",
    "TsType",
    "node_message",
    "snapshot_message",
    "status_message",
    "update_message",
)

JOIN_EVENT: Final = "workflow_run_join"
LEAVE_EVENT: Final = "workflow_run_leave"
SNAPSHOT_EVENT: Final = "workflow_run_snapshot"
NODE_EVENT: Final = "workflow_node_update"
STATUS_EVENT: Final = "workflow_status_update"
SLA_BREACH_EVENT: Final = "workflow_sla_breach"
WIDGET_JOIN_EVENT: Final = "widget_join"
WIDGET_FOLLOW_EVENT: Final = "widget_follow"
WIDGET_DATA_EVENT: Final = "widget_data"
WORKFLOW_JOIN_EVENT: Final = "workflow_join"
"""``{workflowId}``: an editor of that workflow hears ``workflow_saved`` when anyone saves a version of it."""
WORKFLOW_LEAVE_EVENT: Final = "workflow_leave"
WORKFLOW_SAVED_EVENT: Final = "workflow_saved"
"""``{workflowId, version, author, message}``: a version of the workflow was just saved (by another tab, say)."""


class TsType:
    """Names the TypeScript type of an ``Annotated`` field whose Python type is looser (an enum's value, a dict)."""

    def __init__(self, name: str) -> None:
        self.name = name


NodeStatusName = Annotated[str, TsType("NodeStatus")]
RunStatusName = Annotated[str, TsType("RunStatus")]
NodeStateJson = Annotated[dict[str, Any], TsType("NodeState")]
"""``NodeView.to_json()``: the ``NodeStateOut`` of the REST API."""
WaitingForJson = Annotated[dict[str, Any] | None, TsType("WaitingFor | null")]
"""A waiting ``wait`` node's ``{resumeOn, url, until}`` (``WaitingForOut`` of the REST API)."""
OutputTruncatedJson = Annotated[dict[str, Any] | None, TsType("OutputTruncated | null")]
"""An output too large to send (engine/output_view.py): its bytes, the start of its JSON and where to read it."""


class NodeMessage(TypedDict):
    """``workflow_node_update``: one node (or one loop iteration of it) moved."""

    instanceID: str
    nodeID: str
    iteration: str
    status: NodeStatusName
    attempt: int
    output: Any
    outputTruncated: OutputTruncatedJson
    """Set (and ``output`` null) when the output is too large to send: read it at ``href``."""
    error: str | None
    at: float
    pinned: bool
    nextAttemptAt: float | None
    """RETRYING: when the next attempt starts; DISPATCHED behind a delay: when it falls due."""
    childInstanceId: str | None
    """A ``workflow`` node's RUNNING update when it called a child run: that run's id."""
    waitingFor: WaitingForJson
    """A ``wait`` node's WAITING update: what it waits for (null otherwise)."""


class StatusMessage(TypedDict):
    """``workflow_status_update``: the run moved."""

    instanceID: str
    status: RunStatusName
    output: Any
    outputTruncated: OutputTruncatedJson
    """Set (and ``output`` null) when the run's output is too large to send: read it at ``href``."""
    error: str | None


class SlaBreachMessage(TypedDict):
    """``workflow_sla_breach``: the run passed ``options.slaSeconds`` unfinished; it goes on."""

    instanceID: str
    slaSeconds: float
    at: float


class SnapshotMessage(TypedDict):
    """``workflow_run_snapshot``: the run as it stands when a connection joins its room."""

    instanceID: str
    status: RunStatusName
    slaBreachedAt: float | None
    """When the run passed ``options.slaSeconds`` unfinished (null: it has not)."""
    nodes: dict[str, NodeStateJson]


def node_message(update: NodeUpdate) -> NodeMessage:
    output, truncated = ShownOutputs(update.instance_id).show(update.output, update.node_id, update.iteration)
    return {
        "instanceID": update.instance_id,
        "nodeID": update.node_id,
        "iteration": update.iteration,
        "status": update.status.value,
        "attempt": update.attempt,
        "output": output,
        "outputTruncated": truncated,
        "error": update.error,
        "at": update.at,
        "pinned": update.pinned,
        "nextAttemptAt": update.next_attempt_at,
        "childInstanceId": update.child_instance_id,
        "waitingFor": update.waiting_for,
    }


def status_message(update: RunUpdate) -> StatusMessage:
    output, truncated = ShownOutputs(update.instance_id).show(update.output, None)
    return {
        "instanceID": update.instance_id,
        "status": update.status.value,
        "output": output,
        "outputTruncated": truncated,
        "error": update.error,
    }


def update_message(update: NodeUpdate | RunUpdate) -> tuple[str, NodeMessage | StatusMessage | SlaBreachMessage]:
    if isinstance(update, NodeUpdate):
        return NODE_EVENT, node_message(update)
    if update.sla_seconds is not None:
        breach: SlaBreachMessage = {"instanceID": update.instance_id, "slaSeconds": update.sla_seconds, "at": update.at}
        return SLA_BREACH_EVENT, breach
    return STATUS_EVENT, status_message(update)


def snapshot_message(view: RunView) -> SnapshotMessage:
    shown = ShownOutputs(view.run.id)  # the whole snapshot shows a bounded amount of output
    return {
        "instanceID": view.run.id,
        "status": view.run.status.value,
        "slaBreachedAt": view.run.sla_breached_at,
        "nodes": {node_id: shown.node_json(node.to_json(), node_id) for node_id, node in view.nodes.items()},
    }
