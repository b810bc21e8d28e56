"""A decision's effects: what to announce once it has committed (never before), and the announcing."""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from flowdeck.domain.statuses import NodeStatus, RunStatus
from flowdeck.engine.publisher import NodeUpdate, Publisher, RunUpdate, Update
from flowdeck.storage.records import Job

__all__ = ("Announcer", "Effects", "Held", "job_key")


def job_key(job: Job) -> tuple[str, str, str]:
    return job.instance_id, job.node_id, job.iteration


@dataclass(slots=True)
class Effects:
    """What to announce once the decision has committed (never before)."""

    now: float
    updates: list[Update] = field(default_factory=list)
    wake_at: list[float] = field(default_factory=list)
    stopped_runs: list[str] = field(default_factory=list)
    jobs_added: int = 0
    awaiting_edges: bool = False
    """A target still waits for an unresolved edge: something upstream of it is queued or running."""

    def node(self, key: tuple[str, str, str], status: NodeStatus, attempt: int, **extra: Any) -> None:
        instance_id, node_id, iteration = key
        self.updates.append(NodeUpdate(instance_id, node_id, iteration, status, attempt, self.now, **extra))

    def run(self, instance_id: str, status: RunStatus, output: Any = None, error: str | None = None) -> None:
        self.updates.append(RunUpdate(instance_id, status, self.now, output, error))

    @property
    def run_status(self) -> RunStatus | None:
        """The run status this decision set last, if it set one."""
        return next((u.status for u in reversed(self.updates) if isinstance(u, RunUpdate)), None)

    def absorb(self, other: Effects) -> None:
        self.updates += other.updates
        self.wake_at += other.wake_at
        self.stopped_runs += other.stopped_runs
        self.jobs_added += other.jobs_added


@dataclass(slots=True)
class Held:
    """A decision's place in the order of announcements while it is not yet durable (early release)."""

    effects: Effects | None = None
    settled: bool = False


class Announcer:
    """Hands committed effects to the publisher and to the in-process listeners, in the order the decisions
    committed: effects behind an early-released decision that is not yet durable wait for it (a run's
    updates never overtake each other, whichever decision is durable first)."""

    def __init__(self, publisher: Publisher) -> None:
        self.publisher = publisher
        self._held: deque[Held] = deque()
        self.job_listeners: list[Callable[[float], None]] = []
        """Called with the due time of newly queued jobs (in-process wake-ups)."""
        self.stop_listeners: list[Callable[[str], None]] = []
        """Called with the id of a cancelled or deleted run (stop its in-flight nodes)."""
        self.end_listeners: list[Callable[[str, RunStatus], None]] = []
        """Called with the id and status of a run that failed or was cancelled (cancel its children)."""

    def hold(self) -> Held:
        """A place in the order for the effects of a decision that is not yet durable (``settle`` it)."""
        held = Held()
        self._held.append(held)
        return held

    def settle(self, held: Held, effects: Effects | None) -> None:
        """The held decision is durable (``effects``: what to announce of it) or lost (``None``)."""
        held.effects, held.settled = effects, True
        while self._held and self._held[0].settled:
            ready = self._held.popleft().effects
            if ready is not None:
                self._announce(ready)

    def __call__(self, effects: Effects) -> None:
        if self._held:
            self._held.append(Held(effects, settled=True))
        else:
            self._announce(effects)

    def _announce(self, effects: Effects) -> None:
        self.publisher.publish(effects.updates)
        if self.end_listeners:
            for update in effects.updates:
                if isinstance(update, RunUpdate) and update.status in (RunStatus.FAILED, RunStatus.CANCELLED):
                    for ended in self.end_listeners:
                        ended(update.instance_id, update.status)
        if effects.wake_at:
            # The earliest wakes a worker now; a later one (a parked call's timeout) arms its timer.
            for due in sorted(set(effects.wake_at)) if len(effects.wake_at) > 1 else effects.wake_at:
                for listener in self.job_listeners:
                    listener(due)
        for instance_id in effects.stopped_runs:
            for stop in self.stop_listeners:
                stop(instance_id)
