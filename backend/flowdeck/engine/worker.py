"""The worker: claims due jobs, runs them with bounded concurrency, renews their leases, sweeps.

- Wake-ups: the orchestrator tells an in-process worker the moment it queues a job, and every
  future due time it learns of (its own delays and retries, other processes' through the fan-out,
  the next one in the table when it polls) gets a timer, so a due job starts within milliseconds
  when a slot is free; polling every ``poll_interval`` covers the rest.
- Fair share: claims take tenants in turn, and one tenant holds at most ``tenant_concurrency``
  of this worker's slots (default: half of them, at least one).
- A chain runs without claim round trips: finishing a node leases its successor to this worker in
  the same transaction, and the same task goes on with it. So does a run started in this process: its
  start node is leased to this worker in the run's first transaction while a slot is free.
- Heartbeats renew every held lease in one statement. A job whose run was cancelled or deleted
  disappears from the table; the heartbeat notices and stops the local task.
- Sweeps fail runs past ``options.timeoutSeconds`` and recover runs that nothing can move on.
- A graceful stop drains: nothing new is claimed or chained here, the nodes already running may
  finish (their results are recorded, so they never run twice), then the rest is handed back.
"""

from __future__ import annotations

import asyncio
import contextlib
import heapq
import itertools
import logging
import os
import socket
import time
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

from flowdeck.domain.graph import Graph
from flowdeck.domain.statuses import NodeStatus, RunStatus
from flowdeck.engine.executor import NodeExecutor
from flowdeck.engine.orchestrator import NodeOutcome, Orchestrator
from flowdeck.engine.publisher import NodeUpdate
from flowdeck.engine.run_timing import RunTiming, timeout_reason
from flowdeck.engine.sla import mark_breaches
from flowdeck.engine.task_stop import cancel_and_wait
from flowdeck.storage.disconnects import is_disconnect
from flowdeck.storage.jobs import TenantShare
from flowdeck.storage.records import Job
from flowdeck.storage.state import StateManager

__all__ = ("Worker",)

log = logging.getLogger(__name__)

STALE_RUN_SECONDS = 300.0
_MAX_DUE_TIMES = 10_000
_LOST_CONNECTION_RETRIES = 4
"""A decision or a lease renewal whose database connection was closed is taken again this many times."""
_NEXT_DUE_READ_SECONDS = 5.0


class Worker:
    def __init__(
        self,
        state: StateManager,
        orchestrator: Orchestrator,
        executor: NodeExecutor,
        *,
        concurrency: int = 16,
        tenant_concurrency: int | None = None,
        lease_seconds: float = 30.0,
        poll_interval: float = 0.5,
        sweep_interval: float = 1.0,
        worker_id: str | None = None,
        clock: Callable[[], float] = time.time,
        priority_step_seconds: float = 1.0,
    ) -> None:
        self.state = state
        self.clock = clock
        """The time in epoch seconds (due times, run timeouts); tests pass a fake one."""
        self.orchestrator = orchestrator
        self.executor = executor
        self.concurrency = concurrency
        self.tenant_concurrency = tenant_concurrency or max(1, concurrency // 2)
        """At most this many running nodes of one tenant here (FLOWDECK_TENANT_CONCURRENCY)."""
        self.priority_step_seconds = priority_step_seconds
        """A tenant's due jobs are claimed in aged-priority order (FLOWDECK_PRIORITY_STEP_SECONDS)."""
        self.lease_seconds = lease_seconds
        self.poll_interval = poll_interval
        self.sweep_interval = sweep_interval
        self.id = worker_id or f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
        self._current: dict[asyncio.Task[None], Job] = {}
        self._loops: list[asyncio.Task[None]] = []
        self._wake = asyncio.Event()
        self._timer: asyncio.TimerHandle | None = None
        self._timer_due = float("inf")
        self._due_times: list[float] = []
        """A heap of the future due times this worker knows of (one timer runs for the earliest)."""
        self._running: dict[int, str] = {}
        """Job id -> tenant of every node running here (claims within a decision add to it too), and of
        every slot held for a start node (under a negative key: its reservation)."""
        self._reservations = itertools.count(-1, -1)
        self._saturated = False
        self._capped = False
        self._next_due_read = 0.0
        """When a quiet poll next reads the table's next due time (time.monotonic)."""
        self._stopping = False
        self._hurry = asyncio.Event()
        self.sweep_hooks: list[Callable[[float], Awaitable[None]]] = []
        """Run by every sweep with its time (the notification outbox, ``flowdeck/notifications``)."""

    # -- lifecycle -----------------------------------------------------------------------------------
    async def start(self) -> None:
        self._stopping = False
        self._hurry = asyncio.Event()
        self.orchestrator.job_listeners.append(self.notify)
        self.orchestrator.stop_listeners.append(self.stop_run)
        self.state.db.loss_listeners.append(self._decisions_lost)
        self.orchestrator.start_taker = self
        await self.sweep(recover_stale=True)
        self._loops = [
            asyncio.create_task(self._claim_loop(), name=f"flowdeck-claim-{self.id}"),
            asyncio.create_task(self._heartbeat_loop(), name=f"flowdeck-heartbeat-{self.id}"),
            asyncio.create_task(self._sweep_loop(), name=f"flowdeck-sweep-{self.id}"),
        ]

    async def stop(self, *, grace: float = 0.0) -> None:
        """Stop claiming; let the nodes already running finish for up to ``grace`` seconds (or until
        ``hurry``); then stop what is left and give its leases back so another worker resumes it."""
        self._stopping = True
        self._wake.set()
        if self.orchestrator.start_taker is self:
            self.orchestrator.start_taker = None
        with contextlib.suppress(ValueError):
            self.orchestrator.job_listeners.remove(self.notify)
        if grace > 0 and self._current:
            await self._drain(grace)
        with contextlib.suppress(ValueError):
            self.orchestrator.stop_listeners.remove(self.stop_run)
        with contextlib.suppress(ValueError):
            self.state.db.loss_listeners.remove(self._decisions_lost)
        # A loop that lost its cancellation (task_stop.py) would go on: cancelled until it ends. A node's task is
        # cancelled once, so that it can hand back its sandbox process and its lease undisturbed.
        for task in self._current:
            task.cancel()
        await asyncio.gather(cancel_and_wait(self._loops), *self._current, return_exceptions=True)
        self._loops.clear()
        if self._timer is not None:
            self._timer.cancel()
        await self.state.release_leases(self.id)

    def hurry(self) -> None:
        """End a drain now (a second SIGTERM or SIGINT): what still runs is handed back at once."""
        self._hurry.set()

    async def _drain(self, grace: float) -> None:
        running = list(self._current)
        log.info("draining: up to %g s for %d running node(s); a second signal stops at once", grace, len(running))
        finished = asyncio.ensure_future(asyncio.wait(running))
        hurried = asyncio.ensure_future(self._hurry.wait())
        await asyncio.wait([finished, hurried], timeout=grace, return_when=asyncio.FIRST_COMPLETED)
        for waiter in (finished, hurried):
            waiter.cancel()
        left = len(self._current)
        if left:
            log.warning("drain ended with %d node(s) still running: they are handed back to other workers", left)

    @property
    def active_jobs(self) -> list[Job]:
        return list(self._current.values())

    # -- wake-ups ------------------------------------------------------------------------------------
    def notify(self, due: float) -> None:
        """Jobs were queued, due at ``due`` (epoch seconds)."""
        if due - self.clock() <= 0.001:
            self._wake.set()
            return
        heapq.heappush(self._due_times, due)
        if len(self._due_times) > _MAX_DUE_TIMES:  # keep the earliest; the poll finds the others
            self._due_times = heapq.nsmallest(_MAX_DUE_TIMES // 2, self._due_times)
            heapq.heapify(self._due_times)
        self._arm()

    def _arm(self) -> None:
        """Run one timer, for the earliest due time still ahead (later ones are armed as it fires)."""
        now = self.clock()
        while self._due_times and self._due_times[0] <= now:
            heapq.heappop(self._due_times)
        due = self._due_times[0] if self._due_times else float("inf")
        if due == self._timer_due:
            return
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self._timer_due = due
        if due != float("inf"):
            # A hair after the due time, so the claim that follows sees the job as due.
            self._timer = asyncio.get_running_loop().call_later(due - now + 0.001, self._timer_fired)

    def _timer_fired(self) -> None:
        self._timer, self._timer_due = None, float("inf")
        self._wake.set()
        self._arm()

    def stop_run(self, instance_id: str) -> None:
        """Cancel the local tasks of a run that was cancelled or deleted."""
        for task, job in list(self._current.items()):
            if job.instance_id == instance_id:
                task.cancel()

    def _decisions_lost(self, error: BaseException) -> None:
        """Decisions this process went on from before they were durable failed to commit (early release,
        storage/database.py): as after a crash, stop every node running here (some ran on them) and
        forget what was built on them; the leases in the database bring the nodes back."""
        log.error("decisions were lost (%s): stopping this worker's %d running node(s)", error, len(self._current))
        for task in self._current:
            task.cancel()
        self.executor.forget()
        self.orchestrator.forget_versions()

    # -- claiming and running ------------------------------------------------------------------------
    def share(self) -> TenantShare:
        """This worker's share per tenant, for a claim (live: a claim inside a decision adds to it)."""
        return TenantShare(self.tenant_concurrency, self._running, self.priority_step_seconds)

    def reserve_start(self, tenant_id: str) -> int | None:
        """Hold a slot for the start node of a run this process starts (``Orchestrator.start_taker``), if one
        is free and the tenant is under its share here; ``None`` otherwise (the start node is queued)."""
        if self._stopping:
            return None
        if len(self._current) + self._reserved() >= self.concurrency:
            self._saturated = True  # the start node is queued: a slot that frees claims it
            return None
        if sum(1 for tenant in self._running.values() if tenant == tenant_id) >= self.tenant_concurrency:
            self._capped = True
            return None
        reservation = next(self._reservations)
        self._running[reservation] = tenant_id
        return reservation

    def _reserved(self) -> int:
        """Slots held for start nodes whose transactions have not ended yet."""
        return sum(1 for key in self._running if key < 0)

    def take_start(self, reservation: int, job: Job | None) -> None:
        """Run the start node leased to this worker in its run's committed first transaction (``None``: none
        was, the slot is free again). Stopped meanwhile: the lease brings it back to a worker."""
        self._running.pop(reservation, None)
        if job is not None and not self._stopping:
            self._spawn(job)
        elif self._saturated or self._capped:
            self._wake.set()

    def know_start_context(self, instance_id: str, graph: Graph, context: dict[str, Any]) -> None:
        self.executor.know_start_context(instance_id, graph, context)

    async def _claim_loop(self) -> None:
        while not self._stopping:
            self._wake.clear()
            free = self.concurrency - len(self._current) - self._reserved()
            woken = False
            if free > 0:
                share = self.share()
                held = share.held()
                try:
                    jobs = await self.state.claim_jobs(self.id, free, self.lease_seconds, share)
                except Exception as exc:
                    if not is_disconnect(exc):
                        log.exception("claiming jobs failed; retrying after the poll interval")
                    else:  # PostgreSQL restarting: jobs a lost claim took come back when their lease runs out
                        log.warning(
                            "claiming jobs lost the database connection (%s); retrying after the poll interval", exc
                        )
                    jobs = []
                if jobs:
                    now = self.clock()
                    self.orchestrator.publisher.publish(
                        [
                            NodeUpdate(j.instance_id, j.node_id, j.iteration, NodeStatus.RUNNING, j.attempt, now)
                            for j in jobs
                        ]
                    )
                for job in jobs:
                    self._spawn(job)
                self._saturated = len(jobs) == free
                for job in jobs:
                    held[job.tenant_id] = held.get(job.tenant_id, 0) + 1
                # A tenant reached its cap: its due jobs may wait for a slot, so every slot freed claims again.
                self._capped = any(count >= self.tenant_concurrency for count in held.values())
                if self._saturated:
                    continue
            try:
                await asyncio.wait_for(self._wake.wait(), timeout=self.poll_interval)
                woken = True
            except TimeoutError:
                pass
            if not woken and not self._stopping and time.monotonic() >= self._next_due_read:
                await self._arm_next_due()

    async def _arm_next_due(self) -> None:
        """Now and then, after a quiet poll: a timer for the next due time in the table (jobs queued
        before this process started, or by a process whose wake-up it missed)."""
        self._next_due_read = time.monotonic() + _NEXT_DUE_READ_SECONDS
        try:
            due = await self.state.next_due_time(self.clock())
        except Exception:
            log.exception("reading the next due time failed")
            return
        if due is not None and due < self._timer_due:
            self.notify(due)

    def _spawn(self, job: Job) -> None:
        task = asyncio.create_task(self._run(job), name=f"flowdeck-node-{job.node_id}")
        self._current[task] = job
        self._running[job.id] = job.tenant_id

    async def _run(self, job: Job) -> None:
        task = asyncio.current_task()
        assert task is not None
        current: Job | None = job
        known_context: dict[str, Any] | None = None
        leased_early = False  # the first job was claimed (durably); the ones a decision leases may not be yet
        try:
            while current is not None:
                previous = self._current.get(task)
                if previous is not None and previous.id != current.id:
                    self._running.pop(previous.id, None)
                self._current[task] = current
                self._running[current.id] = current.tenant_id
                outcome, context = await self.executor.run(current, known_context, leased_early=leased_early)
                claim_for = None if self._stopping else self.id
                successor = await self._decide(current, outcome, claim_for)
                if successor is not None:
                    leased_early = True
                    known_context = await self.executor.context_for_successor(current, context, outcome, successor)
                    await asyncio.sleep(0)  # let the loop send this node's updates before the next one runs
                else:  # nothing of this chain will join the open group: commit it now (early release)
                    self.state.db.commit_soon()
                current = successor
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            log.exception("node %s of run %s could not be finished", job.node_id, job.instance_id)
            if current is not None and is_disconnect(exc):
                await self._hand_back(current)
            # else the job keeps its lease until it expires; then any worker runs it again
        finally:
            last = self._current.pop(task, None)
            if last is not None:
                self._running.pop(last.id, None)
            if self._saturated or self._capped:  # a slot opened that a due job may be waiting for
                self._wake.set()

    async def _hand_back(self, job: Job) -> None:
        """A node whose result PostgreSQL would not take (it refused connections, or closed them, past every
        retry) is due again now rather than when its lease ends, if a connection can be had for that; its next
        attempt runs it again, as after a takeover (docs/engine.md "Lost connections")."""
        try:
            await self.state.release_leases(self.id, job)
        except Exception as exc:  # noqa: BLE001 -- the lease still brings it back
            log.warning("node %s of run %s keeps its lease until it ends: %s", job.node_id, job.instance_id, exc)
        else:
            log.warning("node %s of run %s handed back: it is due again now", job.node_id, job.instance_id)

    async def _decide(self, job: Job, outcome: NodeOutcome, claim_for: str | None) -> Job | None:
        """The orchestrator's decision on a node's result, taken again when PostgreSQL closed the connection
        under it (a re-decision is safe: the log writes are idempotent and the CAS orders them), so a
        lost connection costs latency rather than the node's lease (docs/engine.md "Lost connections")."""
        for attempt in itertools.count():
            try:
                return await self.orchestrator.handle_result(
                    job,
                    outcome,
                    claim_for=claim_for,
                    early_release=claim_for is not None,
                )
            except Exception as exc:
                if not is_disconnect(exc) or attempt >= _LOST_CONNECTION_RETRIES:
                    raise
                log.warning("the result of node %s of run %s lost its database connection; deciding again",
                            job.node_id, job.instance_id)  # fmt: skip
                await asyncio.sleep(0.05 * 2**attempt)
        raise AssertionError("unreachable")

    # -- leases --------------------------------------------------------------------------------------
    async def _heartbeat_loop(self) -> None:
        interval = self.lease_seconds / 3
        while True:  # also while draining: the nodes still running keep their leases; stop() cancels it
            await asyncio.sleep(interval)
            for attempt in itertools.count():
                try:
                    await self.heartbeat()
                except Exception as exc:
                    if is_disconnect(exc) and attempt < _LOST_CONNECTION_RETRIES:
                        await asyncio.sleep(0.05 * 2**attempt)  # renewing is idempotent: at once again
                        continue
                    log.exception("renewing leases failed")
                break

    async def heartbeat(self) -> None:
        held = {job.id: task for task, job in self._current.items()}
        for job_id in set(self._running) - set(held):  # a claim whose decision rolled back after it
            self._running.pop(job_id, None)
        if not held:
            return
        alive = await self.state.extend_leases(self.id, list(held), self.lease_seconds)
        for job_id in set(held) - alive:
            task = held[job_id]
            job = self._current.get(task)
            if job is None or job.id != job_id:
                continue  # the task finished that job (and maybe moved on) meanwhile
            instance = await self.state.get_instance(job.instance_id)
            if instance is None or instance.status is RunStatus.CANCELLED:
                task.cancel()

    # -- sweeps --------------------------------------------------------------------------------------
    async def _sweep_loop(self) -> None:
        last_stale_sweep = self.clock()
        while not self._stopping:
            await asyncio.sleep(self.sweep_interval)
            recover = self.clock() - last_stale_sweep > STALE_RUN_SECONDS / 5
            if recover:
                last_stale_sweep = self.clock()
            try:
                await self.sweep(recover_stale=recover)
            except Exception:
                log.exception("sweeping runs failed")

    async def sweep(self, *, recover_stale: bool = False) -> None:
        """Fail runs past their timeout; optionally recover RUNNING runs that nothing can move on."""
        now = self.clock()
        await mark_breaches(self.state, self.orchestrator.publisher, now)  # options.slaSeconds
        for instance_id in await self.state.get_timed_out_instances(now):
            instance = await self.state.get_instance(instance_id)
            timing = RunTiming.from_payload(await self.state.first_status_payload(instance_id))
            await self.orchestrator.fail_run(instance_id, timeout_reason(instance, timing))
        if recover_stale:
            for instance_id in await self.state.get_stale_running_instances(now - STALE_RUN_SECONDS):
                await self.orchestrator.fail_run(
                    instance_id, "recovered: the run was RUNNING with no queued or running node for 5 minutes"
                )
        for hook in self.sweep_hooks:
            try:
                await hook(now)
            except Exception:
                log.exception("a sweep hook failed")
