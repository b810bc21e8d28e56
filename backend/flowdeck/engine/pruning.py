"""The pruner: deletes the finished runs that are past their tenant's retention policy (issue 22).

Every worker's sweep runs a pass at most once per ``interval`` (a minute), and ``flowdeck prune`` runs
one by hand. A pass goes tenant by tenant, oldest runs first, in batches of ``batch_size`` runs: one
read picks them, one short write transaction deletes them (storage/retention.py says which runs are
never deleted and how two pruners share the work). After each step the pass rests, so that it works at
most ``SHARE`` of the time. On SQLite the freed pages then go back to the file system, a thousand at
a time with the same rests, so the file shrinks without stopping the engine for long.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass

from flowdeck.domain.retention import RetentionPolicy
from flowdeck.storage.database import Database
from flowdeck.storage.retention import Candidate, Cursor, Cutoffs, Deleted, RetentionStore, TenantPolicy

__all__ = ("Pruner", "TenantPruned")

log = logging.getLogger(__name__)

PRUNE_INTERVAL = 60.0
BATCH_SIZE = 100
SQLITE_BATCH_SIZE = 50
"""Runs per delete transaction (docs/operations.md has the measured times: tens of milliseconds)."""
SHARE = 0.10
"""The part of the time a pass works; it rests the remainder (80-120 runs a second here: docs/benchmarks.md)."""
_SLOW_BATCH_SECONDS = 0.25
"""A batch whose transaction was open longer is logged (the engine's transactions wait behind it)."""
_VACUUM_PAGES = 1_000
"""Pages (4 KiB) one SQLite ``incremental_vacuum`` step hands back."""


@dataclass(frozen=True, slots=True)
class TenantPruned:
    tenant: str
    production: int
    test: int

    @property
    def total(self) -> int:
        return self.production + self.test


class Pruner:
    def __init__(
        self,
        db: Database,
        defaults: RetentionPolicy,
        *,
        clock: Callable[[], float] = time.time,
        batch_size: int | None = None,
        interval: float = PRUNE_INTERVAL,
        share: float = SHARE,
    ) -> None:
        """``share``: the part of the time a pass works (1: no rests, for ``flowdeck prune --fast``)."""
        self.db = db
        self.store = RetentionStore(db)
        self.defaults = defaults
        """The server's policy (FLOWDECK_RETENTION_*), for tenants without their own."""
        self.clock = clock
        self.batch_size = batch_size or (SQLITE_BATCH_SIZE if db.is_sqlite else BATCH_SIZE)
        self.interval = interval
        self.share = share
        self.listeners: list[Callable[[Deleted], None]] = []
        """Told what each batch deleted and how long it took (the ``flowdeck_runs_pruned_total`` metric)."""
        self._last_pass: float | None = None
        """When the last pass started (at first: when the first sweep ran), by the sweeps' clock."""
        self._passing = asyncio.Lock()
        """Held by the pass under way: one at a time per process (a pass by hand waits for a sweep's)."""
        self._task: asyncio.Task[None] | None = None
        self._warned_autovacuum = False

    async def policy(self, tenant_id: str) -> tuple[RetentionPolicy, bool]:
        """The policy a tenant prunes by, and whether it is its own (``False``: the server's defaults)."""
        own = await self.store.get(tenant_id)
        return (own, True) if own is not None else (self.defaults, False)

    async def sweep_hook(self, now: float) -> None:
        """A worker sweep: start a pass when ``interval`` has passed since the last (the first comes one
        interval after the process started, not at once). It runs beside the sweeps, which go on
        failing timed-out runs while a long pass deletes. ``interval`` is read at every sweep, so a
        change after the engine started holds from the next sweep on."""
        if self._last_pass is None:
            self._last_pass = now
        passing = self._passing.locked() or (self._task is not None and not self._task.done())
        if now < self._last_pass + self.interval or passing:
            return
        self._last_pass = now
        self._task = asyncio.create_task(self._background_pass(), name="flowdeck-prune")

    async def _background_pass(self) -> None:
        try:
            await self.prune()
        except Exception:
            log.exception("pruning finished runs failed; the next pass retries")

    async def close(self) -> None:
        """Stop a pass under way (what it deleted stays deleted; the next pass goes on from there)."""
        task, self._task = self._task, None
        if task is not None and not task.done():
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)

    async def prune(self, *, dry_run: bool = False) -> list[TenantPruned]:
        """One pass over every tenant; what was deleted (or, ``dry_run``, would be), per tenant that had any.
        A pass already under way in this process is waited for first (two would split the same batches
        between them, each reporting part of them)."""
        async with self._passing:
            now = self.clock()
            report = []
            for tenant in await self.store.tenants(self.defaults):
                pruned = await self._prune_tenant(tenant, now, dry_run)
                if pruned.total:
                    report.append(pruned)
            if report and not dry_run:
                log.info("pruned %d finished runs past their retention", sum(t.total for t in report))
                await self._reclaim_space()
                await self._warn_without_autovacuum()
            return report

    async def _prune_tenant(self, tenant: TenantPolicy, now: float, dry_run: bool) -> TenantPruned:
        policy = tenant.policy
        count = await self.store.count_cutoff(tenant.tenant_id, policy.max_runs) if policy.max_runs else None
        cutoffs = Cutoffs(policy.production_cutoff(now), policy.test_cutoff(now), count)
        done = Deleted()
        if not cutoffs.any:
            return TenantPruned(tenant.name, 0, 0)
        keep = await self.store.feeding_widgets(tenant.tenant_id)
        after: Cursor | None = None
        counted: set[str] = set()  # dry run: children counted with their caller
        while True:
            started = time.perf_counter()
            batch = await self.store.candidates(tenant.tenant_id, cutoffs, keep, after, self.batch_size)
            if not batch:
                break
            after = _cursor(after, batch)
            runs = [*batch, *await self.store.descendants([run.id for run in batch], keep)]
            if dry_run:
                fresh = {run.id: run for run in runs if run.id not in counted}
                counted.update(run.id for run in runs[len(batch) :])  # the descendants
                tests = sum(1 for run in fresh.values() if run.is_test)
                done = Deleted(done.production + len(fresh) - tests, done.test + tests)
                continue
            deleted = await self.store.delete(list(dict.fromkeys(run.id for run in runs)))
            done = Deleted(done.production + deleted.production, done.test + deleted.test)
            if deleted.seconds > _SLOW_BATCH_SECONDS:
                ms = deleted.seconds * 1000
                log.warning("a pruning batch of %d runs held its transaction %.0f ms", deleted.total, ms)
            if deleted.total:
                for listener in self.listeners:
                    listener(deleted)
            await self._rest(started)
        return TenantPruned(tenant.name, done.production, done.test)

    async def _rest(self, started: float) -> None:
        """Pause after a step that began at ``started`` so that the pass works at most ``share`` of the
        time: the engine's own work (on SQLite, the same event loop and write lock) goes on meanwhile."""
        await asyncio.sleep((time.perf_counter() - started) * (1 / self.share - 1))

    async def _warn_without_autovacuum(self) -> None:
        """Once per process: PostgreSQL only makes deleted rows reusable by vacuuming (docs/operations.md)."""
        if self._warned_autovacuum or not await self.store.autovacuum_off():
            return
        self._warned_autovacuum = True
        log.warning(
            "PostgreSQL's autovacuum is off: the rows pruning deletes stay as dead rows and the queue tables "
            "bloat; turn autovacuum on or VACUUM instances, instance_logs and node_jobs regularly"
        )

    async def _reclaim_space(self) -> None:
        """Hand the freed pages back in steps, until a step found fewer than a step's worth left and
        freed those too (the engine's own deletes free pages all the time: waiting for none could go
        on for ever; SQLite reuses those)."""
        started = time.perf_counter()
        left = await self.db.reclaim_space(_VACUUM_PAGES)
        while left:
            last = left < _VACUUM_PAGES
            await self._rest(started)
            started = time.perf_counter()
            left = await self.db.reclaim_space(_VACUUM_PAGES)
            if last:
                return


def _cursor(previous: Cursor | None, batch: list[Candidate]) -> Cursor:
    """Past this batch: its last creation time, and the ids at that time (the next batch starts there)."""
    last = batch[-1].created_at
    ids = {run.id for run in batch if run.created_at == last}
    if previous is not None and previous.created_at == last:
        ids |= previous.ids
    return Cursor(last, frozenset(ids))
