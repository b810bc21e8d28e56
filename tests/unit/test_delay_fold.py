"""How a delay reads in the log's fold (storage/delay_fold.py): WAITING until it falls due, whatever rows of
other nodes come between the delay's completion and the delayed dispatch of its successor."""

from __future__ import annotations

from typing import Any

from flowdeck.domain.statuses import EventType, NodeStatus
from flowdeck.storage.delay_fold import delay_waits, waiting_status
from flowdeck.storage.records import LogRow


def _row(log_id: int, node_id: str, event: EventType, at: float, payload: Any = None) -> LogRow:
    return LogRow(log_id, "run", node_id, "", event.value, None, None, payload, None, 1, at)


def test_a_claim_of_another_node_between_the_delay_and_its_dispatch_does_not_end_the_wait() -> None:
    rows = [
        _row(1, "wait", EventType.NODE_COMPLETED, 100.0),
        _row(2, "flaky", EventType.NODE_STARTED, 100.001),  # a claim of a parallel branch, no CAS: it may land here
        _row(3, "after", EventType.NODE_DISPATCHED, 100.0, {"dueAt": 160.0}),
    ]
    [wait] = delay_waits(rows)
    assert (wait.node_id, wait.due, wait.successors) == ("wait", 160.0, ["after"])
    assert waiting_status(wait) is NodeStatus.WAITING


def test_the_wait_ends_when_its_successor_starts() -> None:
    rows = [
        _row(1, "wait", EventType.NODE_COMPLETED, 100.0),
        _row(2, "after", EventType.NODE_DISPATCHED, 100.0, {"dueAt": 160.0}),
        _row(3, "after", EventType.NODE_STARTED, 160.2),
    ]
    [wait] = delay_waits(rows)
    assert waiting_status(wait) is NodeStatus.COMPLETED and wait.ended_at == 160.0


def test_a_retry_s_delayed_dispatch_is_no_delay() -> None:
    rows = [
        _row(1, "flaky", EventType.NODE_FAILED, 100.0),
        _row(2, "flaky", EventType.NODE_DISPATCHED, 100.0, {"dueAt": 130.0}),
    ]
    assert delay_waits(rows) == []
