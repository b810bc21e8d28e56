"""The publisher: how the engine tells the outside world (Socket.IO, the CLI, tests) what changed.

The engine publishes after its transaction commits, never before, and never waits for a
subscriber: a slow or vanished consumer must not stall execution.

Besides the engine's updates it carries two other kinds of message, each told to its listeners: revocations,
the keys of credentials that were just revoked (``accounts/revocation.py``: the realtime server closes the
connections holding them), and notices, a workflow's new version was saved (the realtime server tells the
workflow's editors). The fan-out (``engine/fanout.py``) listens to both too and sends them to the other
processes, whose publishers tell their own listeners.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Coroutine, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

from flowdeck.domain.statuses import NodeStatus, RunStatus
from flowdeck.engine.task_stop import cancel_and_wait

__all__ = (
    "Consumer",
    "LocalPublisher",
    "NodeUpdate",
    "NoticeListener",
    "Publisher",
    "RevocationListener",
    "RunUpdate",
    "SavedNotice",
    "Subscription",
    "Update",
    "Watches",
)

log = logging.getLogger(__name__)

_Message = TypeVar("_Message")


@dataclass(frozen=True, slots=True)
class NodeUpdate:
    instance_id: str
    node_id: str
    iteration: str
    status: NodeStatus
    attempt: int
    at: float
    output: Any = None
    error: str | None = None
    pinned: bool = False
    next_attempt_at: float | None = None
    child_instance_id: str | None = None
    """A ``workflow`` node's RUNNING update when it called a child run: that run."""
    waiting_for: Any = None
    """A ``wait`` node's WAITING update: ``{resumeOn, url, until}``."""


@dataclass(frozen=True, slots=True)
class RunUpdate:
    instance_id: str
    status: RunStatus
    at: float
    output: Any = None
    error: str | None = None
    sla_seconds: float | None = None
    """Set on the announcement of an SLA breach (``engine/sla.py``), which changes no status."""


@dataclass(frozen=True, slots=True)
class SavedNotice:
    """A new version of a workflow was saved (by an editor, an API client, a restore)."""

    tenant_id: str
    workflow_id: str
    version: int
    author: str | None = None
    message: str | None = None


Update = NodeUpdate | RunUpdate
RevocationListener = Callable[[tuple[str, ...]], None]
"""Told the keys of revoked credentials; must not block or raise (it may start a task)."""
NoticeListener = Callable[[SavedNotice], None]
"""Told every saved version; must not block or raise (it may start a task)."""


class Watches(Protocol):
    """Which runs' node updates this process's clients want from the other processes (``engine/watches.py``
    when a fan-out joins processes; one process alone has nothing to ask)."""

    async def watch(self, instance_id: str | None) -> None:
        """From when this returns, the other processes send this one the run's node updates (every run's:
        ``None``). Call it before reading the run's snapshot."""

    def unwatch(self, instance_id: str | None) -> None:
        """One ``watch`` fewer for the run."""


class _Alone:
    async def watch(self, instance_id: str | None) -> None:
        return None

    def unwatch(self, instance_id: str | None) -> None:
        return None


class Publisher(Protocol):
    def publish(self, updates: list[Update]) -> None:
        """Hand over updates in order. Must not block or raise."""


class Subscription:
    """A bounded queue of updates for one consumer; when it overflows, the oldest are dropped."""

    def __init__(
        self,
        publisher: LocalPublisher,
        instance_id: str | None,
        maxsize: int,
        runs_only: bool,
        wants: Callable[[Update], bool] | None = None,
    ) -> None:
        self._publisher = publisher
        self.instance_id = instance_id
        self.runs_only = runs_only
        self.wants = wants
        """Asked of each update as it is published: ``False`` leaves it out (never queued)."""
        self.queue: asyncio.Queue[Update] = asyncio.Queue(maxsize=maxsize)
        self.dropped = 0

    def offer(self, update: Update) -> None:
        if self.runs_only and isinstance(update, NodeUpdate):
            return
        if self.wants is not None and not self.wants(update):
            return
        if self.queue.full():
            self.queue.get_nowait()
            self.dropped += 1
        self.queue.put_nowait(update)

    async def get(self) -> Update:
        return await self.queue.get()

    def close(self) -> None:
        self._publisher.unsubscribe(self)

    def __enter__(self) -> Subscription:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()


class LocalPublisher:
    """In-process fan-out: subscribers for one run, or for all runs (``instance_id=None``)."""

    def __init__(self) -> None:
        self._by_run: dict[str | None, set[Subscription]] = {}
        self.taps: list[Callable[[list[Update]], None]] = []
        """Called with the updates this process's engine publishes, not those relayed from other processes
        (metrics count each update once across a fleet). A tap must be quick and must not raise."""
        self._revocation_listeners: list[RevocationListener] = []
        self._notice_listeners: list[NoticeListener] = []
        self._gap_listeners: list[Callable[[], None]] = []
        self.watches: Watches = _Alone()
        """Where a client says which runs' node updates it wants from other processes (the fan-out's)."""

    def subscribe(
        self,
        instance_id: str | None = None,
        *,
        maxsize: int = 10_000,
        runs_only: bool = False,
        wants: Callable[[Update], bool] | None = None,
    ) -> Subscription:
        """Updates of one run (or of all runs); ``runs_only`` leaves out node updates, ``wants`` any it refuses."""
        return self.attach(Subscription(self, instance_id, maxsize, runs_only, wants))

    def attach(self, subscription: Subscription) -> Subscription:
        """Offer ``subscription`` its run's updates (or all, for ``instance_id`` None) from now on."""
        self._by_run.setdefault(subscription.instance_id, set()).add(subscription)
        return subscription

    def unsubscribe(self, subscription: Subscription) -> None:
        subscribers = self._by_run.get(subscription.instance_id)
        if subscribers is not None:
            subscribers.discard(subscription)
            if not subscribers:
                del self._by_run[subscription.instance_id]

    def publish(self, updates: list[Update], *, relayed_from: Subscription | None = None) -> None:
        """Offer updates to their subscribers.

        ``relayed_from``: the updates came from another process through this subscription (a bridge's
        outgoing one), which must not get them back, and the taps have seen them where they happened.
        """
        if relayed_from is None:
            for tap in self.taps:
                tap(updates)
        if not self._by_run:
            return
        skip = relayed_from
        for update in updates:
            for key in (update.instance_id, None):
                for subscription in self._by_run.get(key, ()):
                    if subscription is not skip:
                        subscription.offer(update)

    def on_revoke(self, listener: RevocationListener) -> Callable[[], None]:
        """Tell ``listener`` every revocation from now on; the answer stops that."""
        self._revocation_listeners.append(listener)
        return lambda: self._revocation_listeners.remove(listener)

    def revoke(self, credentials: Sequence[str], *, skip: RevocationListener | None = None) -> None:
        """Announce revoked credentials (``skip``: a listener that must not hear them, e.g. their source)."""
        keys = tuple(credentials)
        if keys:
            _tell(self._revocation_listeners, keys, skip)

    def on_notice(self, listener: NoticeListener) -> Callable[[], None]:
        """Tell ``listener`` every saved version from now on; the answer stops that."""
        self._notice_listeners.append(listener)
        return lambda: self._notice_listeners.remove(listener)

    def notice(self, notice: SavedNotice, *, skip: NoticeListener | None = None) -> None:
        """Announce a saved version (``skip``: a listener that must not hear it, e.g. its source)."""
        _tell(self._notice_listeners, notice, skip)

    def on_gap(self, listener: Callable[[], None]) -> Callable[[], None]:
        """Tell ``listener`` whenever updates from other processes may have been missed (``missed``); the
        answer stops that. It must not block or raise (it may start a task)."""
        self._gap_listeners.append(listener)
        return lambda: self._gap_listeners.remove(listener)

    def missed(self) -> None:
        """Updates from other processes may have been lost on the way (the fan-out listened again after its
        connection dropped, or a sender could not send for a while): what shows them must read them again."""
        for listener in list(self._gap_listeners):
            try:
                listener()
            except Exception:
                log.exception("a gap listener failed")


def _tell(
    listeners: list[Callable[[_Message], None]], message: _Message, skip: Callable[[_Message], None] | None
) -> None:
    for listener in list(listeners):
        if listener is skip:
            continue
        try:
            listener(message)
        except Exception:
            log.exception("a %s listener failed", type(message).__name__)


class Consumer:
    """A task of its own that reads one subscription (``consume`` loops over it) until stopped."""

    def __init__(
        self,
        publisher: LocalPublisher,
        consume: Callable[[Subscription], Coroutine[Any, Any, None]],
        *,
        name: str,
        maxsize: int,
        runs_only: bool = False,
        wants: Callable[[Update], bool] | None = None,
    ) -> None:
        self._publisher = publisher
        self._consume = consume
        self._name = name
        self._maxsize = maxsize
        self._runs_only = runs_only
        self._wants = wants
        self._subscription: Subscription | None = None
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        self._subscription = self._publisher.subscribe(
            maxsize=self._maxsize, runs_only=self._runs_only, wants=self._wants
        )
        self._task = asyncio.create_task(self._consume(self._subscription), name=self._name)

    async def stop(self) -> None:
        if self._task is not None:
            await cancel_and_wait([self._task])
            self._task = None
        if self._subscription is not None:
            self._subscription.close()
            self._subscription = None
