"""The scheduler: every due time of every schedule of each workflow's latest version starts one production run.

Exactly once, with any number of processes: a due time's run has a deterministic id,
``uuid5(workflow id, schedule index, due time)``, and starting a run inserts its instance row, whose
primary key lets only one process create it; the others' starts fail on the key and are ignored. The
claim *is* the run, in the run's own creating transaction: no crash between "claimed" and "started"
can lose a due time or start it twice. (Details and the alternatives: docs/engine.md, "Triggers".)

Each process keeps an index of the scheduled workflows (their latest version's valid schedules),
refreshed every ``refresh_seconds`` (and at once after ``poke()``), and sleeps until the next due time
(capped). For each schedule it fires only the latest due time at or before now, and never one before
the version was saved, so a process that was down catches up on at most the latest missed time.
A deleted or re-saved workflow's old schedules stop: the index drops them, and a fire re-checks the
latest version first. An error in one schedule is logged and retried on the next wake; the loop goes on.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Final

import sqlalchemy as sa

from flowdeck.domain.schedules import Schedule, parse_schedules
from flowdeck.engine.engine import Engine
from flowdeck.engine.flow_control import FlowKeyError
from flowdeck.engine.run_limits import TooManyActiveRunsError
from flowdeck.storage.tables import workflow_versions, workflows

__all__ = ("TRIGGER", "ScheduledWorkflow", "Scheduler", "fire_id")

log = logging.getLogger(__name__)

TRIGGER: Final = "schedule"
_NAMESPACE: Final = uuid.UUID("6f1c1a52-3a8e-4b8e-9a44-0c7d2f1f5e10")
_CHUNK: Final = 500
_MIN_SLEEP: Final = 0.05
_AFTER_DUE: Final = 0.01  # wake just after a due time, never just before it


def fire_id(workflow_id: str, index: int, due: float) -> str:
    """The instance id of the run a schedule starts at a due time: the same in every process."""
    return str(uuid.uuid5(_NAMESPACE, f"{workflow_id}/{index}/{round(due)}"))


@dataclass(frozen=True, slots=True)
class ScheduledWorkflow:
    workflow_id: str
    tenant_id: str
    version: int
    saved_at: float
    """When this version was saved: no due time before it fires."""
    schedules: tuple[Schedule, ...]


_Key = tuple[str, int, int]  # (workflow id, version, schedule index)


class Scheduler:
    def __init__(
        self,
        engine: Engine,
        *,
        clock: Callable[[], float] = time.time,
        refresh_seconds: float = 15.0,
        max_sleep_seconds: float = 15.0,
    ) -> None:
        self.engine = engine
        self.db = engine.db
        self.clock = clock
        self.refresh_seconds = refresh_seconds
        self.max_sleep_seconds = max_sleep_seconds
        self._versions: dict[str, int] = {}  # workflow id -> the latest version the index has seen
        self._index: dict[str, ScheduledWorkflow] = {}  # only workflows with schedules
        self._fired: dict[_Key, float] = {}  # the latest due time handled (fired here or elsewhere)
        self._next: dict[_Key, float] = {}
        self._refresh_at = -math.inf
        self._wake = asyncio.Event()
        self._stopping = False
        self._task: asyncio.Task[None] | None = None

    @property
    def scheduled(self) -> dict[str, ScheduledWorkflow]:
        """The index: workflow id -> its latest version's schedules (workflows without any are left out)."""
        return dict(self._index)

    # -- lifecycle ---------------------------------------------------------------------------------
    async def start(self) -> None:
        if self._task is None:
            self._stopping = False
            self._task = asyncio.create_task(self._run(), name="flowdeck-scheduler")

    async def stop(self) -> None:
        task, self._task = self._task, None
        if task is None:
            return
        self._stopping = True
        self._wake.set()
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task

    def poke(self) -> None:
        """A workflow was saved or deleted: refresh the index now."""
        self._refresh_at = -math.inf
        self._wake.set()

    async def _run(self) -> None:
        while not self._stopping:
            self._wake.clear()
            try:
                await self.tick()
            except Exception:  # the database may be down for a moment: try again on the next wake
                log.exception("the scheduler's tick failed")
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), self.sleep_for(self.clock()))

    def sleep_for(self, now: float) -> float:
        """Seconds until the next due time of any schedule, or the next refresh, capped."""
        wake = min(self._refresh_at, now + self.max_sleep_seconds)
        for entry in self._index.values():
            for schedule in entry.schedules:
                wake = min(wake, self._next_due(entry, schedule, now))
        return max(_MIN_SLEEP, wake - now + _AFTER_DUE)

    def _next_due(self, entry: ScheduledWorkflow, schedule: Schedule, now: float) -> float:
        key = (entry.workflow_id, entry.version, schedule.index)
        due = self._next.get(key)
        if due is None or due <= now:
            due = self._next[key] = schedule.next_due(now)
        return due

    # -- one pass ----------------------------------------------------------------------------------
    async def tick(self, now: float | None = None) -> list[str]:
        """Refresh the index if it is due, then start every due run; returns the ids of the runs started here."""
        now = self.clock() if now is None else now
        if now >= self._refresh_at:
            await self.refresh()
            self._refresh_at = now + self.refresh_seconds
        started: list[str] = []
        for entry in list(self._index.values()):
            for schedule in entry.schedules:
                try:
                    instance_id = await self._fire_due(entry, schedule, now)
                except Exception:
                    log.exception(
                        "schedule %d of workflow %s (version %d) failed to start a run",
                        schedule.index,
                        entry.workflow_id,
                        entry.version,
                    )
                    continue
                if instance_id is not None:
                    started.append(instance_id)
        return started

    async def _fire_due(self, entry: ScheduledWorkflow, schedule: Schedule, now: float) -> str | None:
        due = schedule.previous_due(now)
        key = (entry.workflow_id, entry.version, schedule.index)
        if due < entry.saved_at or self._fired.get(key, -math.inf) >= due:
            return None
        instance_id = await self._fire(entry, schedule, due)
        self._fired[key] = due
        return instance_id

    async def _fire(self, entry: ScheduledWorkflow, schedule: Schedule, due: float) -> str | None:
        """Start the run of one due time unless some process did; ``None`` if it was not started here."""
        instance_id = fire_id(entry.workflow_id, schedule.index, due)
        state = self.engine.state
        if await state.get_instance(instance_id) is not None:
            return None  # fired already (by this or another process)
        try:
            await self.engine.start_workflow_run(
                entry.tenant_id,
                entry.workflow_id,
                schedule.input,
                trigger=TRIGGER,
                version=entry.version,
                instance_id=instance_id,
            )
        except LookupError:  # deleted, or saved again since the last refresh
            self._refresh_at = -math.inf
            return None
        except (TooManyActiveRunsError, FlowKeyError) as exc:  # kept as a FAILED run saying why
            await self._refused(entry, schedule, instance_id, str(exc))
            return None
        except Exception:
            if await state.get_instance(instance_id) is not None:
                return None  # another process created it first: its primary key refused ours
            raise
        log.info("schedule %d of workflow %s started run %s", schedule.index, entry.workflow_id, instance_id)
        return instance_id

    async def _refused(self, entry: ScheduledWorkflow, schedule: Schedule, instance_id: str, reason: str) -> None:
        """A due time refused by the tenant's active-runs budget (or a flow-control key failing on the schedule's
        input) is kept as a FAILED run saying why
        (the tenant sees it; ``options.onFailure`` is told), created exactly once like a started one."""
        what = f"schedule {schedule.index} of workflow {entry.workflow_id}"
        log.warning("%s did not start run %s: %s", what, instance_id, reason)
        try:
            await self.engine.record_refused_run(
                entry.tenant_id,
                entry.workflow_id,
                schedule.input,
                trigger=TRIGGER,
                instance_id=instance_id,
                reason=f"not started: {reason}",
            )
        except LookupError:
            self._refresh_at = -math.inf
        except Exception:
            if await self.engine.state.get_instance(instance_id) is None:
                raise  # not recorded by another process either: the next wake tries again

    # -- the index ---------------------------------------------------------------------------------
    async def refresh(self) -> None:
        """Re-read which workflows are live and at which version; read only the definitions that changed."""
        live_stmt = sa.select(workflows.c.id, workflows.c.tenant_id, workflows.c.latest_version).where(
            workflows.c.deleted_at.is_(None)
        )
        async with self.db.read(snapshot=False) as conn:
            live = {row[0]: (row[1], int(row[2])) for row in await conn.execute(live_stmt)}
        changed = [wid for wid, (_, version) in live.items() if self._versions.get(wid) != version]
        for start in range(0, len(changed), _CHUNK):
            await self._load(changed[start : start + _CHUNK])
        for gone in set(self._versions) - set(live):
            del self._versions[gone]
            self._index.pop(gone, None)
        keep = {(e.workflow_id, e.version) for e in self._index.values()}
        for cache in (self._fired, self._next):
            for key in [k for k in cache if (k[0], k[1]) not in keep]:
                del cache[key]

    async def _load(self, workflow_ids: list[str]) -> None:
        join = workflows.join(
            workflow_versions,
            sa.and_(
                workflow_versions.c.workflow_id == workflows.c.id,
                workflow_versions.c.version == workflows.c.latest_version,
            ),
        )
        stmt = (
            sa.select(
                workflows.c.id,
                workflows.c.tenant_id,
                workflow_versions.c.version,
                workflow_versions.c.created_at,
                workflow_versions.c.definition,
            )
            .select_from(join)
            .where(workflows.c.id.in_(workflow_ids), workflows.c.deleted_at.is_(None))
        )
        async with self.db.read(snapshot=False) as conn:
            rows = (await conn.execute(stmt)).all()
        for workflow_id, tenant_id, version, saved_at, definition in rows:
            self._versions[workflow_id] = int(version)
            schedules = tuple(parse_schedules(definition))
            if schedules:
                self._index[workflow_id] = ScheduledWorkflow(
                    workflow_id, tenant_id, int(version), float(saved_at), schedules
                )
            else:
                self._index.pop(workflow_id, None)
