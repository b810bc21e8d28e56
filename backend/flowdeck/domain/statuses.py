"""Run and node statuses and the event types of the log (SPEC §4, §5): upper case everywhere.

The node statuses are data: ``NODE_TRANSITIONS`` lists every move a node's status makes as a viewer
of the run sees it (the log folded, and the live updates), and what makes it happen. Which statuses
are terminal and the order of a node's progress (``NODE_STATUS_RANK``) follow from that table; the
relay and the editor (through ``frontend/src/generated/statuses.ts``, written by ``flowdeck
generate``) use them rather than copies of their own.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from types import MappingProxyType
from typing import Final

__all__ = (
    "NODE_STATUS_RANK",
    "NODE_TRANSITIONS",
    "TERMINAL_NODE_STATUSES",
    "TERMINAL_RUN_STATUSES",
    "EventType",
    "NodeStatus",
    "NodeTransition",
    "RunStatus",
    "node_progress",
)


class RunStatus(StrEnum):
    PENDING = "PENDING"
    RUNNING = "RUNNING"
    COMPLETED = "COMPLETED"
    FAILED = "FAILED"
    CANCELLED = "CANCELLED"


TERMINAL_RUN_STATUSES = frozenset({RunStatus.COMPLETED, RunStatus.FAILED, RunStatus.CANCELLED})


class NodeStatus(StrEnum):
    """A node's status, the non-terminal ones in the order a node moves through them."""

    PENDING = "PENDING"
    DISPATCHED = "DISPATCHED"
    RUNNING = "RUNNING"
    WAITING = "WAITING"
    RETRYING = "RETRYING"
    COMPLETED = "COMPLETED"
    FAILED = "FAILED"
    SKIPPED = "SKIPPED"
    CANCELLED = "CANCELLED"


@dataclass(frozen=True, slots=True)
class NodeTransition:
    """One move of a node's status. ``next_attempt``: the move starts the node's next attempt."""

    source: NodeStatus
    target: NodeStatus
    when: str
    next_attempt: bool = False


_S = NodeStatus
_RUN_ENDED = "the run ended (failed, cancelled or timed out) first (NODE_CANCELLED)"

NODE_TRANSITIONS: Final[tuple[NodeTransition, ...]] = (
    NodeTransition(_S.PENDING, _S.DISPATCHED, "its inputs are resolved: its job is queued (NODE_DISPATCHED)"),
    NodeTransition(_S.PENDING, _S.COMPLETED, "a pinned output stands in for running it"),
    NodeTransition(_S.PENDING, _S.SKIPPED, "no taken edge reaches it (NODE_SKIPPED)"),
    NodeTransition(_S.PENDING, _S.CANCELLED, _RUN_ENDED),
    NodeTransition(_S.DISPATCHED, _S.RUNNING, "a worker leased its job (NODE_STARTED)"),
    NodeTransition(_S.DISPATCHED, _S.CANCELLED, _RUN_ENDED),
    NodeTransition(_S.RUNNING, _S.COMPLETED, "the attempt succeeded, or failed into an error edge (NODE_COMPLETED)"),
    NodeTransition(_S.RUNNING, _S.FAILED, "the attempt failed and no attempt is left (NODE_FAILED)"),
    NodeTransition(_S.RUNNING, _S.RETRYING, "the attempt failed and another is due (NODE_FAILED with retry)"),
    NodeTransition(_S.RUNNING, _S.CANCELLED, _RUN_ENDED),
    NodeTransition(_S.RUNNING, _S.RUNNING, "another worker took it over after a lease expired", next_attempt=True),
    NodeTransition(_S.RUNNING, _S.WAITING, "a wait node parked: no worker slot is held (SYSTEM_SET __wait)"),
    NodeTransition(_S.WAITING, _S.COMPLETED, "resumed by its token, or its timeoutSeconds passed (NODE_COMPLETED)"),
    NodeTransition(
        _S.WAITING, _S.FAILED, "its timeoutSeconds passed and no edge takes its timeout handle (NODE_FAILED)"
    ),
    NodeTransition(_S.WAITING, _S.CANCELLED, _RUN_ENDED),
    NodeTransition(_S.RETRYING, _S.RUNNING, "the next attempt starts after its backoff", next_attempt=True),
    NodeTransition(_S.RETRYING, _S.CANCELLED, _RUN_ENDED),
)

TERMINAL_NODE_STATUSES: Final[frozenset[NodeStatus]] = frozenset(
    status for status in NodeStatus if not any(move.source is status for move in NODE_TRANSITIONS)
)
"""A node in one of these never moves again in its run: COMPLETED, FAILED, SKIPPED, CANCELLED."""

_MOVING: Final = tuple(status for status in NodeStatus if status not in TERMINAL_NODE_STATUSES)

NODE_STATUS_RANK: Final = MappingProxyType(
    {status: _MOVING.index(status) if status in _MOVING else len(_MOVING) for status in NodeStatus}
)
"""How far along its attempt a node is: the non-terminal statuses in order, then every terminal one."""


def node_progress(attempt: int, status: NodeStatus | str) -> tuple[int, int]:
    """Order of a node's updates: by attempt, then by status; a later update has a greater progress."""
    return attempt, NODE_STATUS_RANK[NodeStatus(status)]


class EventType(StrEnum):
    INPUT_SET = "INPUT_SET"
    SYSTEM_SET = "SYSTEM_SET"
    NODE_DISPATCHED = "NODE_DISPATCHED"
    NODE_STARTED = "NODE_STARTED"
    NODE_COMPLETED = "NODE_COMPLETED"
    NODE_FAILED = "NODE_FAILED"
    NODE_SKIPPED = "NODE_SKIPPED"
    NODE_CANCELLED = "NODE_CANCELLED"
    """A node left unfinished when its run failed, was cancelled or timed out (terminal for that attempt)."""
    RUN_STATUS = "RUN_STATUS"
    RUN_SLA_BREACHED = "RUN_SLA_BREACHED"
