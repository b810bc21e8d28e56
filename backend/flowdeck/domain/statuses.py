"""Run and node statuses and the event types of the log (SPEC §4, §5): upper case everywhere."""

from enum import StrEnum

__all__ = ("TERMINAL_RUN_STATUSES", "EventType", "NodeStatus", "RunStatus")


class RunStatus(StrEnum):
    PENDING = "PENDING"
    RUNNING = "RUNNING"
    COMPLETED = "COMPLETED"
    FAILED = "FAILED"
    CANCELLED = "CANCELLED"


TERMINAL_RUN_STATUSES = frozenset({RunStatus.COMPLETED, RunStatus.FAILED, RunStatus.CANCELLED})


class NodeStatus(StrEnum):
    PENDING = "PENDING"
    DISPATCHED = "DISPATCHED"
    RUNNING = "RUNNING"
    RETRYING = "RETRYING"
    COMPLETED = "COMPLETED"
    FAILED = "FAILED"
    SKIPPED = "SKIPPED"
    CANCELLED = "CANCELLED"


class EventType(StrEnum):
    INPUT_SET = "INPUT_SET"
    SYSTEM_SET = "SYSTEM_SET"
    NODE_DISPATCHED = "NODE_DISPATCHED"
    NODE_STARTED = "NODE_STARTED"
    NODE_COMPLETED = "NODE_COMPLETED"
    NODE_FAILED = "NODE_FAILED"
    NODE_SKIPPED = "NODE_SKIPPED"
    RUN_STATUS = "RUN_STATUS"
