"""The payloads of SPEC §9, exactly as the editor reads them (``instanceID``, ``nodeID``, upper-case statuses)."""

from __future__ import annotations

from typing import Any, Final

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


def node_message(update: NodeUpdate) -> dict[str, Any]:
    return {
        "instanceID": update.instance_id,
        "nodeID": update.node_id,
        "iteration": update.iteration,
        "status": update.status.value,
        "attempt": update.attempt,
        "output": update.output,
        "error": update.error,
        "at": update.at,
        "pinned": update.pinned,
        "nextAttemptAt": update.next_attempt_at,
    }


def status_message(update: RunUpdate) -> dict[str, Any]:
    return {
        "instanceID": update.instance_id,
        "status": update.status.value,
        "output": update.output,
        "error": update.error,
    }


def update_message(update: NodeUpdate | RunUpdate) -> tuple[str, dict[str, Any]]:
    if isinstance(update, NodeUpdate):
        return NODE_EVENT, node_message(update)
    if update.sla_seconds is not None:
        return SLA_BREACH_EVENT, {"instanceID": update.instance_id, "slaSeconds": update.sla_seconds, "at": update.at}
    return STATUS_EVENT, status_message(update)


def snapshot_message(view: RunView) -> dict[str, Any]:
    return {
        "instanceID": view.run.id,
        "status": view.run.status.value,
        "slaBreachedAt": view.run.sla_breached_at,
        "nodes": {node_id: node.to_json() for node_id, node in view.nodes.items()},
    }
