"""Run budgets: how many runs one tree of sub-workflow calls may hold, and how many runs of one tenant
may be active (PENDING or RUNNING) at once. Both are settings (``FLOWDECK_MAX_TREE_RUNS``,
``FLOWDECK_TENANT_ACTIVE_RUNS``) and every refusal names its setting.

The tree budget is exact: the root run's ``tree_runs`` counter is raised in the transaction that opens
the child (storage/children.py ``count_tree_run``). The tenant budget is counted before a start from
outside (the index on ``instances(tenant_id, status)``); starts in flight at the same moment may each
see the last free place, so it can be passed by at most the number of starts running concurrently. A
child run counts it inside its call's transaction.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from flowdeck.engine.outcomes import Failed

__all__ = (
    "RETRY_AFTER_SECONDS",
    "RunLimits",
    "TooManyActiveRunsError",
    "active_runs_message",
    "call_refused",
)

RETRY_AFTER_SECONDS: Final = 30
"""The ``Retry-After`` of a start refused for the tenant's active runs: runs end at no known time, so a
client is told to come back after a while rather than hammer the API."""

TREE_SETTING: Final = "FLOWDECK_MAX_TREE_RUNS"
ACTIVE_SETTING: Final = "FLOWDECK_TENANT_ACTIVE_RUNS"


@dataclass(frozen=True, slots=True)
class RunLimits:
    max_tree_runs: int = 1000
    """Runs in one tree of sub-workflow calls, the run nothing called included."""
    tenant_active_runs: int = 10_000
    """A tenant's PENDING and RUNNING runs."""


class TooManyActiveRunsError(Exception):
    """A start refused: the tenant already has ``limit`` active runs (the API answers 429)."""

    def __init__(self, limit: int) -> None:
        super().__init__(active_runs_message(limit))
        self.limit = limit
        self.retry_after = RETRY_AFTER_SECONDS


def active_runs_message(limit: int) -> str:
    return (
        f"the tenant already has {limit:,} active (queued, scheduled or running) runs, the most"
        f" {ACTIVE_SETTING} allows; start more once some have finished"
    )


def call_refused(limits: RunLimits, *, tree_full: bool) -> Failed:
    """The failure of a ``workflow`` node whose call would pass a budget; error edges and
    ``errorHandling`` decide what follows. A full tree stays full while its runs live (never retried); the
    tenant's active runs may end, so that failure is retried as the node's ``retry`` says."""
    if tree_full:
        message = (
            f"this call would start run {limits.max_tree_runs + 1:,} of its tree of sub-workflow calls; at most"
            f" {limits.max_tree_runs:,} runs may be in one tree ({TREE_SETTING})"
        )
        return Failed("TreeRunsExceeded", message, retryable=False)
    return Failed("TooManyActiveRuns", active_runs_message(limits.tenant_active_runs))
