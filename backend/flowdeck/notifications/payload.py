"""The notification body ``{run, workflow, event}`` and its signature."""

from __future__ import annotations

import hashlib
import hmac
import json
from typing import Any

from flowdeck.domain.statuses import EventType, NodeStatus
from flowdeck.storage.records import InstanceRecord, LogRow

__all__ = ("SIGNATURE_HEADER", "body_bytes", "build_payload", "sign")

SIGNATURE_HEADER = "X-Flowdeck-Signature"


def _failed_node(rows: list[LogRow]) -> str | None:
    for row in reversed(rows):
        if row.event_type == EventType.NODE_FAILED and row.node_status == NodeStatus.FAILED.value:
            return row.node_id
    return None


def build_payload(run: InstanceRecord, rows: list[LogRow], title: str, event: str) -> dict[str, Any]:
    return {
        "run": {
            "instanceId": run.id,
            "workflowId": run.workflow_id,
            "version": run.workflow_version,
            "status": run.status.value,
            "error": run.error,
            "failedNodeId": _failed_node(rows),
            "input": run.input,
            "startedAt": run.started_at,
        },
        "workflow": {"id": run.workflow_id, "title": title},
        "event": event,
    }


def body_bytes(payload: Any) -> bytes:
    """The exact bytes sent (and signed)."""
    return json.dumps(payload, separators=(",", ":"), sort_keys=True).encode()


def sign(secret: str, body: bytes) -> str:
    """``sha256=<hex HMAC-SHA256 of the body>``, the value of ``X-Flowdeck-Signature``."""
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()
