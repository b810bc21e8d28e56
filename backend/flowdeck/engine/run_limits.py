"""Run budgets: the bytes of output one run may store (``FLOWDECK_MAX_RUN_BYTES``, charged by
engine/run_budget.py), how many runs one tree of sub-workflow calls may hold, and how many runs of one
tenant may be active (PENDING or RUNNING) at once. Each is a setting (``FLOWDECK_MAX_TREE_RUNS``,
``FLOWDECK_TENANT_ACTIVE_RUNS``) and every refusal names its setting.

The tree budget is exact: the root run's ``tree_runs`` counter is raised in the transaction that opens
the child (storage/children.py ``count_tree_run``). The tenant budget is counted before a start from
outside (the index on ``instances(tenant_id, status)``), at most once a second per tenant and process
while the tenant is below half of it (``ActiveRunsGate``), at every start above; starts in flight at the
same moment may each see the last free place, so it can be passed by the starts running concurrently.
A child run counts through the same gate, before its call's transaction.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Final

from flowdeck.engine.outcomes import Failed
from flowdeck.settings import DEFAULT_MAX_RUN_BYTES

__all__ = (
    "RETRY_AFTER_SECONDS",
    "ActiveRunsGate",
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
    max_run_bytes: int = DEFAULT_MAX_RUN_BYTES
    """The bytes of output one run may store (engine/run_budget.py)."""


class TooManyActiveRunsError(Exception):
    """A start refused: the tenant already has ``limit`` active runs (the API answers 429)."""

    def __init__(self, limit: int) -> None:
        super().__init__(active_runs_message(limit))
        self.limit = limit
        self.retry_after = RETRY_AFTER_SECONDS


@dataclass(slots=True)
class _Seen:
    count: int
    at: float
    admitted: int = 0
    """Starts this process let through since the count."""


class ActiveRunsGate:
    """Decides whether a tenant may start one more run, counting its active runs only when it matters.

    Counting is one index read (about 1.6 ms on SQLite with 2,400 active runs, more with more), a fifth of a
    start's cost. So a tenant counted below half the budget less than ``fresh_seconds`` ago is let through
    on that count plus the starts admitted here since, while they stay below half; a tenant at or above half
    is counted at every start, and one refused is counted afresh next time. The budget can thus be passed
    only by what other processes start within ``fresh_seconds`` while this one believed the tenant far
    below it.

    Starts that arrive while a count of their tenant is under way share it (each is let through while
    the count plus the starts admitted on it stay below the budget): a hundred runs started at once cost
    one count, not a hundred (they used to be a fifth of PostgreSQL's statements in ``flowdeck bench``'s
    concurrent runs)."""

    def __init__(
        self,
        count: Callable[[str, int], Awaitable[int]],
        limit: int,
        *,
        fresh_seconds: float = 1.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._count = count
        self.limit = limit
        self._fresh = fresh_seconds
        self._clock = clock
        self._seen: dict[str, _Seen] = {}
        self._counting: dict[str, asyncio.Future[_Seen]] = {}

    async def admit(self, tenant_id: str) -> bool:
        now = self._clock()
        seen = self._seen.get(tenant_id)
        if seen is not None and now - seen.at < self._fresh and 2 * (seen.count + seen.admitted + 1) <= self.limit:
            seen.admitted += 1
            return True
        counting = self._counting.get(tenant_id)
        if counting is None:
            counting = asyncio.ensure_future(self._counted(tenant_id, now))
            self._counting[tenant_id] = counting
        seen = await asyncio.shield(counting)
        if seen.count + seen.admitted >= self.limit:
            return False
        seen.admitted += 1
        return True

    async def _counted(self, tenant_id: str, now: float) -> _Seen:
        try:
            seen = _Seen(await self._count(tenant_id, self.limit), now)
        finally:
            del self._counting[tenant_id]
        if seen.count >= self.limit:
            self._seen.pop(tenant_id, None)
            return seen
        if len(self._seen) >= 10_000:  # keep only the fresh ones of many tenants
            self._seen = {t: s for t, s in self._seen.items() if now - s.at < self._fresh}
        self._seen[tenant_id] = seen
        return seen


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
