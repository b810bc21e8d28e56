"""Flow control on a workflow (SPEC §2; docs/engine.md "Flow control"): ``options.concurrency`` (at most
``limit`` runs at once per value of the ``key`` template, ``strategy`` queue / cancel_in_progress /
cancel_newest), ``options.debounce`` (starts within ``seconds`` of each other collapse into the last) and
``priority`` (the order queued runs are taken in, lifted by age so none starves).

The database is the arbiter: a group is locked (storage/flow.py ``lock_group``) before its slots are counted,
in the transaction that opens, admits or cancels a run, so a slot is never granted twice across processes; a
run leaves its wait by one conditional UPDATE, so it is started once. A run that must wait is created PENDING
with its start job parked; ``FlowAdmission`` (every process, every poll interval and whenever it ends a run)
admits the ready ones: their start job falls due, and the start node's decision begins the run."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import hashlib
import json
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final

from flowdeck.domain.definition import WorkflowOptions
from flowdeck.domain.flow_control import DEFAULT_PRIORITY, MAX_GROUP_CHARS
from flowdeck.domain.statuses import TERMINAL_RUN_STATUSES, RunStatus
from flowdeck.engine.decision import end_run
from flowdeck.engine.effects import Effects
from flowdeck.engine.outcomes import RunStateError
from flowdeck.engine.publisher import LocalPublisher, RunUpdate, Update
from flowdeck.sandbox.templates import TemplateError, render
from flowdeck.storage import flow
from flowdeck.storage.flow import CONCURRENCY, DEBOUNCE, FlowRow, Waiting
from flowdeck.storage.state import StateManager, StateTransaction

__all__ = (
    "PARKED_SECONDS",
    "FlowAdmission",
    "FlowKeyError",
    "FlowRequest",
    "RetryRefusedError",
    "flow_request",
    "place_new_run",
    "place_retry",
)

log = logging.getLogger(__name__)

PARKED_SECONDS: Final = 10 * 365 * 24 * 3600.0
"""How far ahead a waiting run's start job is parked: admission makes it due (it is never reached)."""


class RetryRefusedError(RunStateError):
    """A partial retry refused by ``options.concurrency`` (strategy ``cancel_newest``, the group full)."""


class FlowKeyError(ValueError):
    """A key template could not be worked out from the run input (the API answers 400 naming ``field``)."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field


@dataclass(frozen=True, slots=True)
class FlowRequest:
    """A production run's flow control, worked out from its input before its transaction opens."""

    workflow_id: str
    options: WorkflowOptions
    priority: int
    group_key: str | None
    debounce_key: str | None


def _key(template: str | None, run_input: Any, path: str) -> str:
    if template is None:
        return ""  # no key: the workflow's runs are one group
    try:
        value = render(template, {"input": run_input}, path=path)
    except TemplateError as exc:
        raise FlowKeyError(path, f"{path} could not be worked out from the run input: {exc}") from exc
    text = value if isinstance(value, str) else json.dumps(value, sort_keys=True, default=str)
    if len(text) > MAX_GROUP_CHARS:
        return "sha256:" + hashlib.sha256(text.encode()).hexdigest()
    return text


def flow_request(
    workflow_id: str, options: WorkflowOptions, run_input: Any, priority: int | None
) -> FlowRequest | None:
    """``None`` when the run needs nothing of flow control (no concurrency, no debounce, priority 50)."""
    chosen = options.priority if priority is None else priority
    if options.concurrency is None and options.debounce is None and chosen == DEFAULT_PRIORITY:
        return None
    concurrency, debounce = options.concurrency, options.debounce
    group = _key(concurrency.key, run_input, "options.concurrency.key") if concurrency else None
    debounced = _key(debounce.key, run_input, "options.debounce.key") if debounce else None
    return FlowRequest(workflow_id, options, chosen, group, debounced)


def _group_lock(workflow_id: str, kind: str, key: str) -> str:
    return f"flowdeck:{kind}:{workflow_id}:{key}"


def _label(key: str) -> str:
    return "its workflow" if key == "" else f"group '{key}'"


async def cancel_other(tx: StateTransaction, effects: Effects, instance_id: str, reason: str) -> bool:
    """End another run CANCELLED inside this transaction, moving its version as its own decision would (its
    decisions in flight lose their compare-and-swap and see it ended). ``False`` when it had ended."""
    while True:
        seen = await tx.read_instance_version(instance_id)
        if seen is None or seen[0] in TERMINAL_RUN_STATUSES:
            return False
        if await tx.compare_and_swap(instance_id, seen[1]) is not None:
            break
    await end_run(tx, instance_id, RunStatus.CANCELLED, reason, effects, error=reason)
    effects.stopped_runs.append(instance_id)
    return True


@dataclass(frozen=True, slots=True)
class Placement:
    waiting: str | None
    """``None``: the run may start now; else why it waits."""
    ready_at: float
    cancel_reason: str | None = None
    """Set when the run itself is cancelled at once (``cancel_newest``, a full group)."""


async def _claim_slot(
    tx: StateTransaction,
    effects: Effects,
    *,
    instance_id: str,
    workflow_id: str,
    group_key: str,
    limit: int,
    strategy: str,
    queue_empty: bool,
) -> str | None:
    """With the group locked: ``None`` when ``instance_id`` takes a slot (cancelling the oldest holders for
    ``cancel_in_progress``), ``"queue"`` when it must wait, else the reason it is cancelled."""
    holders = [h for h in await flow.group_holders(tx.conn, workflow_id, group_key) if h != instance_id]
    if len(holders) < limit and queue_empty:
        return None
    if strategy == "cancel_in_progress":
        reason = (
            f"cancelled by run {instance_id}: options.concurrency allows {limit} run(s) at once in"
            f" {_label(group_key)} (strategy cancel_in_progress: the newest run replaces the oldest)"
        )
        for oldest in holders[: len(holders) - limit + 1]:
            await cancel_other(tx, effects, oldest, reason)
        return None
    if strategy == "cancel_newest":
        return (
            f"cancelled at once: {len(holders)} run(s) of this workflow already run in {_label(group_key)}, the"
            f" most options.concurrency.limit ({limit}) allows (strategy cancel_newest)"
        )
    return "queue"


async def place_new_run(
    tx: StateTransaction, effects: Effects, request: FlowRequest, instance_id: str, available_at: float | None
) -> tuple[Placement, FlowRow]:
    """Decide a new run's place (inside the transaction that opens it): run now, wait or be cancelled; the
    debounced runs it replaces are cancelled here, naming it."""
    now, options = tx.now, request.options
    concurrency, debounce = options.concurrency, options.debounce
    placement = Placement(None, now)
    if debounce is not None:
        assert request.debounce_key is not None
        name = _group_lock(request.workflow_id, DEBOUNCE, request.debounce_key)
        await flow.lock_group(tx.conn, is_sqlite=tx.db.is_sqlite, name=name)
        reason = (
            f"debounced: replaced by run {instance_id}, started within options.debounce.seconds ({debounce.seconds:g})"
        )
        for earlier in await flow.debounced_in_window(tx.conn, request.workflow_id, request.debounce_key, now):
            if await flow.take_waiting(tx.conn, earlier, DEBOUNCE):
                await cancel_other(tx, effects, earlier, reason)
        placement = Placement(DEBOUNCE, max(now + debounce.seconds, available_at or 0.0))
    elif concurrency is not None and available_at is not None and available_at > now:
        placement = Placement(CONCURRENCY, available_at)  # a scheduled start takes its slot when it is due
    elif concurrency is not None:
        placement = await _place_in_group(tx, effects, request, instance_id)
    return placement, _flow_row(request, instance_id, placement)


async def _place_in_group(tx: StateTransaction, effects: Effects, request: FlowRequest, instance_id: str) -> Placement:
    """With its group locked: the run takes a slot now, queues, or (``cancel_newest``) is cancelled."""
    concurrency = request.options.concurrency
    assert concurrency is not None and request.group_key is not None
    name = _group_lock(request.workflow_id, CONCURRENCY, request.group_key)
    await flow.lock_group(tx.conn, is_sqlite=tx.db.is_sqlite, name=name)
    queue = await flow.group_queue(tx.conn, request.workflow_id, request.group_key, 0.0)
    verdict = await _claim_slot(
        tx,
        effects,
        instance_id=instance_id,
        workflow_id=request.workflow_id,
        group_key=request.group_key,
        limit=concurrency.limit,
        strategy=concurrency.strategy,
        queue_empty=not [w for w in queue if w.instance_id != instance_id],
    )
    if verdict == "queue":
        return Placement(CONCURRENCY, tx.now)
    return Placement(None, tx.now, cancel_reason=verdict)


def _flow_row(request: FlowRequest, instance_id: str, placement: Placement) -> FlowRow:
    concurrency = request.options.concurrency
    return FlowRow(
        instance_id=instance_id,
        workflow_id=request.workflow_id,
        group_key=request.group_key,
        debounce_key=request.debounce_key,
        concurrency_limit=concurrency.limit if concurrency else None,
        strategy=concurrency.strategy if concurrency else None,
        priority=request.priority,
        waiting=placement.waiting,
        ready_at=placement.ready_at,
    )


async def place_retry(tx: StateTransaction, effects: Effects, request: FlowRequest, instance_id: str) -> FlowRow:
    """A partial retry of a FAILED run takes its group's slot as a new run would (inside the retry's
    transaction): now (``cancel_in_progress`` cancelling the oldest holders), or queued in order (the
    caller parks the retried jobs until admission releases them). ``cancel_newest`` refuses the retry
    (``RetryRefusedError``): the run stays FAILED, to be retried when its group has room. Debounce does
    not apply: a retry is asked for once. The run's flow-control row is replaced by the returned one."""
    placement = await _place_in_group(tx, effects, dataclasses.replace(request, debounce_key=None), instance_id)
    if placement.cancel_reason is not None:
        raise RetryRefusedError(
            f"run {instance_id} was not retried: {placement.cancel_reason.removeprefix('cancelled at once: ')};"
            " retry it when one of them ends"
        )
    row = _flow_row(dataclasses.replace(request, debounce_key=None), instance_id, placement)
    await flow.replace_flow_row(tx.conn, row)
    return row


def waiting_reason(row: FlowRow | None, status: RunStatus) -> str | None:
    """Why a PENDING run has not begun, in words (GET /api/runs/{id} ``waitingReason``)."""
    if row is None or row.waiting is None or status is not RunStatus.PENDING:
        return None
    if row.waiting == DEBOUNCE:
        return (
            "debounced: it starts once options.debounce.seconds pass without another start"
            f"{'' if not row.debounce_key else f' with key {row.debounce_key!r}'}, which would replace it"
        )
    return (
        f"queued: options.concurrency allows {row.concurrency_limit} run(s) of this workflow at once in"
        f" {_label(row.group_key or '')}; it starts when one of them ends"
    )


class FlowAdmission:
    """Admits waiting runs whose turn has come, in every process; the group lock makes them agree."""

    def __init__(
        self,
        state: StateManager,
        publisher: LocalPublisher,
        announce: Callable[[Effects], None],
        *,
        step_seconds: float,
        interval: float = 0.5,
        batch: int = 200,
        may_hold_slot: Callable[[str], bool] = lambda _: True,
    ) -> None:
        """``may_hold_slot(run)``: whether that run may hold a slot of ``options.concurrency`` (``PlanCache``)."""
        self._state = state
        self._may_hold_slot = may_hold_slot
        self._announce = announce
        """The orchestrator's: publishes what a cancellation changed and wakes workers for admitted starts."""
        self.step_seconds = step_seconds
        self.interval = interval
        self._batch = batch
        self._nudged = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._stopping = False
        publisher.taps.append(self._on_own_updates)

    def _on_own_updates(self, updates: list[Update]) -> None:
        """A run this process ended may have freed a slot: admit at once. Another process's run end is
        left to that process (a tap sees only this process's updates): every process reading the queue at
        each run end cost a read per process per run, and they raced for the same group lock. A run whose
        version has no ``options.concurrency`` held no slot: its end reads nothing (the poll still runs)."""
        if any(
            isinstance(u, RunUpdate) and u.status in TERMINAL_RUN_STATUSES and self._may_hold_slot(u.instance_id)
            for u in updates
        ):
            self._nudged.set()

    def start(self) -> None:
        self._stopping = False
        self._task = asyncio.create_task(self._loop(), name="flowdeck-flow-admission")

    async def stop(self) -> None:
        """Let the pass under way finish (never cancelled inside a transaction), then end the loop."""
        self._stopping = True
        self._nudged.set()
        if self._task is not None:
            await self._task
            self._task = None

    async def _loop(self) -> None:
        while True:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._nudged.wait(), timeout=self.interval)
            self._nudged.clear()
            if self._stopping:
                return
            try:
                await self.admit_ready()
            except Exception:
                log.exception("admitting queued runs failed; trying again after the poll interval")

    async def admit_ready(self) -> int:
        """Admit what may start now; returns how many runs were admitted."""
        async with self._state.db.read(snapshot=False) as conn:  # a read: no writer lock taken while idle
            rows = await flow.ready_rows(
                conn,
                is_sqlite=self._state.db.is_sqlite,
                now=self._state.clock(),
                step_seconds=self.step_seconds,
                limit=self._batch,
            )
        groups: dict[tuple[str, str], Waiting] = {}
        admitted = 0
        for row in rows:
            if row.waiting == DEBOUNCE:
                async with self._state.transaction() as tx:
                    then = None if row.group_key is None else CONCURRENCY
                    if await flow.take_waiting(tx.conn, row.instance_id, DEBOUNCE, then=then) and then is None:
                        await flow.release_start(tx.conn, row.instance_id, tx.now)
                        admitted += 1
            if row.group_key is not None:
                groups.setdefault((row.workflow_id, row.group_key), row)
        for (workflow_id, group_key), first in groups.items():
            admitted += await self._admit_group(workflow_id, group_key, first)
        if admitted:
            woken = Effects(self._state.clock())
            woken.wake_at.append(woken.now)
            self._announce(woken)
        return admitted

    async def _admit_group(self, workflow_id: str, group_key: str, first: Waiting) -> int:
        admitted = 0
        async with self._state.transaction() as tx:
            effects = Effects(tx.now)
            await flow.lock_group(
                tx.conn, is_sqlite=tx.db.is_sqlite, name=_group_lock(workflow_id, CONCURRENCY, group_key)
            )
            for waiting in await flow.group_queue(tx.conn, workflow_id, group_key, self.step_seconds):
                verdict = await _claim_slot(
                    tx,
                    effects,
                    instance_id=waiting.instance_id,
                    workflow_id=workflow_id,
                    group_key=group_key,
                    limit=waiting.concurrency_limit or first.concurrency_limit or 1,
                    strategy=waiting.strategy or "queue",
                    queue_empty=True,
                )
                if verdict == "queue":
                    break
                if not await flow.take_waiting(tx.conn, waiting.instance_id, CONCURRENCY):
                    continue
                if verdict is None:
                    await flow.release_start(tx.conn, waiting.instance_id, tx.now)
                    admitted += 1
                else:
                    await cancel_other(tx, effects, waiting.instance_id, verdict)
        if effects.updates or effects.stopped_runs:
            self._announce(effects)
        return admitted
