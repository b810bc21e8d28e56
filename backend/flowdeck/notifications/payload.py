"""The notification body ``{run, workflow, event}`` and its signatures.

Signed in the Standard Webhooks form (https://www.standardwebhooks.com): ``webhook-id`` (the delivery,
the same on every retry), ``webhook-timestamp`` (epoch seconds when it was sent) and
``webhook-signature: v1,<base64 HMAC-SHA256 of "{id}.{timestamp}.{body}">``. The key is the UTF-8
bytes of the workflow's secret (``fdn_…``) as it is shown, so a Standard Webhooks library takes it as
``whsec_`` + base64 of those bytes (docs/operations.md "Notifications"). Signing the id and the time
lets a receiver refuse a replayed delivery; the body-only ``X-Flowdeck-Signature`` is kept one release
for receivers written against it (deprecated).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
from typing import Any

from flowdeck.domain.statuses import EventType, NodeStatus
from flowdeck.storage.records import InstanceRecord, LogRow

__all__ = ("SIGNATURE_HEADER", "body_bytes", "build_payload", "sign", "signed_headers", "standard_signature")

SIGNATURE_HEADER = "X-Flowdeck-Signature"
"""Deprecated: the body-only signature, sent beside the Standard Webhooks headers for one release."""


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
    """``sha256=<hex HMAC-SHA256 of the body>``, the value of the deprecated ``X-Flowdeck-Signature``."""
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


def standard_signature(secret: str, delivery_id: str, timestamp: int, body: bytes) -> str:
    """``v1,<base64 HMAC-SHA256 of "{id}.{timestamp}.{body}">``, the value of ``webhook-signature``."""
    signed = f"{delivery_id}.{timestamp}.".encode() + body
    return "v1," + base64.b64encode(hmac.new(secret.encode(), signed, hashlib.sha256).digest()).decode()


def signed_headers(secret: str, delivery_id: str, timestamp: int, body: bytes) -> dict[str, str]:
    """The signature headers of one attempt at sending ``body`` (the Standard Webhooks ones, and the old one)."""
    return {
        "webhook-id": delivery_id,
        "webhook-timestamp": str(timestamp),
        "webhook-signature": standard_signature(secret, delivery_id, timestamp, body),
        SIGNATURE_HEADER: sign(secret, body),
    }
