"""Live updates across processes: the publishers of all processes joined over one transport.

Each process forwards what its own engine publishes (node and run updates), the credentials it
revoked, the workflow versions it saved (notices), and the due times of the jobs it queued; it feeds
what other processes sent into its local publisher (never back out) and wakes its idle worker for
their jobs. So the Socket.IO relay of ``flowdeck serve`` sees the nodes that ``flowdeck worker``
processes ran, a token revoked through one process closes its connections in every process, an editor
connected to any process hears a save made through another, and a job queued anywhere starts at once.

Node updates are the bulk, and only a process with a client watching their run needs them: each goes
only to those processes (``engine/watches.py`` keeps who watches what), on that process's own topic. So
do a run's updates before its end (started, SLA breached): only a page showing the run shows them. A
run's end goes to the processes that may wait for it (a webhook's or a widget's ``?wait``, a page, a
widget room: ``flowdeck serve``); a failed run's end to every process (each forgets the run's cached plan:
a partial retry may move it to another version); a ``flowdeck worker`` says in its heartbeats that it
wants no other run end (``hears_run_ends``), as nothing there waits for one. All else goes on the shared
topic every process hears. So a ``flowdeck worker`` hears of other processes' runs only those that
failed, and a process nobody watches sends nothing else of them.

The transport is PostgreSQL ``LISTEN/NOTIFY`` by default (``engine/pg_notify.py``) or Redis pub/sub
(``engine/redis_bridge.py``). Neither keeps history: a process that is down misses messages, which
the log still holds (clients read it through the run's snapshot). A transport with a size limit gets
large updates without their output or error, which the receiving process reads back from the
database (``storage/live_refs.py``).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Final, Protocol

import msgspec

from flowdeck.domain.statuses import TERMINAL_RUN_STATUSES, NodeStatus, RunStatus
from flowdeck.engine.publisher import LocalPublisher, NodeUpdate, RunUpdate, SavedNotice, Subscription, Update
from flowdeck.engine.task_stop import cancel_and_wait
from flowdeck.engine.watches import Watches
from flowdeck.storage.database import Database
from flowdeck.storage.live_refs import node_result, run_result

__all__ = ("MESSAGE_KINDS", "MISSED", "SHARED", "Fanout", "FanoutTraffic", "Transport", "message_kind", "read_back")

log = logging.getLogger(__name__)

_BATCH = 500
_QUEUED = 100_000
_DUE_TIMES_PER_MESSAGE = 50
_RUNS_PER_MESSAGE = 100  # a run id is at most 64 characters: 100 fit any transport

SHARED = "all"
"""The topic every process hears; each also hears its own (its origin, 32 hex digits)."""

MISSED = b""
"""What a transport delivers after it listened again (its connection was lost): messages sent meanwhile
were missed. The process's clients then read the runs they follow again (``LocalPublisher.missed``)."""


_KINDS: Final = (("updates", "updates"), ("due", "wakeups"), ("revoked", "revocations"), ("notices", "notices"))
MESSAGE_KINDS: Final = (*(kind for _, kind in _KINDS), "control")


def message_kind(body: dict[str, Any]) -> str:
    """What a message carries, for its counters: updates, wakeups, revocations, notices, or control (who is
    alive and watches what, acknowledgements, a gap to read again)."""
    return next((kind for key, kind in _KINDS if key in body), "control")


@dataclass(slots=True)
class FanoutTraffic:
    """Messages this process sent to the other processes and heard from them, by kind, and the node and run
    updates among them: what joining processes costs each one (``/metrics``, ``bench --workers``)."""

    sent: dict[str, int] = field(default_factory=dict)
    received: dict[str, int] = field(default_factory=dict)
    updates_sent: int = 0
    updates_received: int = 0


class Transport(Protocol):
    max_message_bytes: int | None
    """The largest message it carries (None: no limit worth minding)."""

    async def open(self, deliver: Callable[[bytes], None], topics: Sequence[str]) -> None:
        """Connect and subscribe to ``topics``; every message any process sends to one of them (this
        process's too) goes to ``deliver``, in the order each sender sent them. After its connection was
        lost and it listens again, it delivers ``MISSED``."""

    async def send(self, topic: str, message: bytes) -> None:
        """Send to the processes subscribed to ``topic`` (none: nothing happens)."""

    async def close(self) -> None: ...


Resolver = Callable[[Update], Awaitable[Update]]
"""Fills in what a by-reference update left out (its output and error)."""


def read_back(db: Database) -> Resolver:
    async def resolve(update: Update) -> Update:
        if isinstance(update, NodeUpdate):
            output, error = await node_result(db, update.instance_id, update.node_id, update.iteration, update.attempt)
        else:
            output, error = await run_result(db, update.instance_id)
        return replace(update, output=output, error=error)

    return resolve


# -- the wire format ---------------------------------------------------------------------------------
def encode_update(update: Update, *, by_reference: bool = False) -> dict[str, Any]:
    common = {"i": update.instance_id, "s": update.status.value, "at": update.at}
    if not by_reference:
        common |= {"o": update.output, "e": update.error}
    else:
        common["r"] = 1
    if isinstance(update, NodeUpdate):
        return common | {
            "k": "node",
            "n": update.node_id,
            "it": update.iteration,
            "a": update.attempt,
            "p": update.pinned,
            "na": update.next_attempt_at,
            "c": update.child_instance_id,
            "w": update.waiting_for,
        }
    if update.sla_seconds is not None:
        common["sla"] = update.sla_seconds
    return common | {"k": "run"}


def decode_update(item: dict[str, Any]) -> tuple[Update, bool]:
    """The update, and whether it was sent by reference (its output and error still to be read)."""
    output, error = item.get("o"), item.get("e")
    if item["k"] == "node":
        update: Update = NodeUpdate(
            item["i"],
            item["n"],
            item["it"],
            NodeStatus(item["s"]),
            item["a"],
            item["at"],
            output=output,
            error=error,
            pinned=item["p"],
            next_attempt_at=item["na"],
            child_instance_id=item.get("c"),
            waiting_for=item.get("w"),
        )
    else:
        update = RunUpdate(
            item["i"], RunStatus(item["s"]), item["at"], output=output, error=error, sla_seconds=item.get("sla")
        )
    return update, bool(item.get("r"))


class _Notice(msgspec.Struct, rename="camel"):
    """A saved version on the wire: one a message (its message is at most 500 characters, its author an
    email: far under PostgreSQL's 8,000 bytes)."""

    tenant_id: str
    workflow_id: str
    version: int
    author: str | None = None
    message: str | None = None


def encode_notice(notice: SavedNotice) -> dict[str, Any]:
    wire = _Notice(notice.tenant_id, notice.workflow_id, notice.version, notice.author, notice.message)
    return msgspec.to_builtins(wire)  # type: ignore[no-any-return]


def decode_notice(item: Any) -> SavedNotice:
    wire = msgspec.convert(item, _Notice)  # a malformed one raises msgspec.ValidationError
    return SavedNotice(wire.tenant_id, wire.workflow_id, wire.version, wire.author, wire.message)


class Fanout:
    def __init__(
        self,
        transport: Transport,
        publisher: LocalPublisher,
        *,
        resolve: Resolver | None = None,
        heartbeat_seconds: float = 0.5,
        ack_seconds: float = 2.0,
        hears_run_ends: bool = True,
    ) -> None:
        """``hears_run_ends``: this process wants every run's end from the others (it serves clients that may
        wait for one); ``False``: only the failed ones."""
        self.transport = transport
        self.hears_run_ends = hears_run_ends
        self.origin = uuid.uuid4().hex
        self.traffic = FanoutTraffic()
        self.wake_listeners: list[Callable[[float], None]] = []
        """Told the due times of jobs other processes queued (this process's worker, if it runs one)."""
        self.watches = Watches(
            self.origin,
            self._announce,
            heartbeat_seconds=heartbeat_seconds,
            ack_seconds=ack_seconds,
            late=publisher.missed,
        )
        self._publisher = publisher
        self._resolve = resolve
        self._incoming: asyncio.Queue[bytes] = asyncio.Queue(maxsize=_QUEUED)
        self._dropped = 0
        """Messages dropped on a full queue in the current burst (logged once at its start and once at its end)."""
        self._outgoing: Subscription | None = None
        self._control: asyncio.Queue[tuple[str, dict[str, Any]]] = asyncio.Queue()
        self._send_lock = asyncio.Lock()  # sends leave in the order they were decided
        self._unsent = 0
        """Messages the transport refused since it last took one (PostgreSQL restarting, Redis down)."""
        self._revoked: asyncio.Queue[tuple[str, ...]] = asyncio.Queue(maxsize=10_000)
        self._revocation_listener = self._queue_revocation  # one object: the publisher skips it by identity
        self._stop_revocations: Callable[[], None] | None = None
        self._notices: asyncio.Queue[SavedNotice] = asyncio.Queue(maxsize=10_000)
        self._notice_listener = self._queue_notice  # one object: the publisher skips it by identity
        self._stop_notices: Callable[[], None] | None = None
        self._due: set[float] = set()
        self._due_queued = asyncio.Event()
        self._tasks: list[asyncio.Task[None]] = []
        self._alone = publisher.watches

    async def start(self) -> None:
        # fails here, at start-up, when the transport is unreachable
        await self.transport.open(self._deliver, (self.origin, SHARED))
        self.watches.begin()
        self._outgoing = self._publisher.subscribe(maxsize=_QUEUED, wants=self._wanted_elsewhere)
        self._stop_revocations = self._publisher.on_revoke(self._revocation_listener)
        self._stop_notices = self._publisher.on_notice(self._notice_listener)
        self._publisher.watches = self.watches
        self._heartbeat(hello=True)
        self._tasks = [
            asyncio.create_task(self._forward_control(), name="flowdeck-fanout-control"),
            asyncio.create_task(self._forward_updates(self._outgoing), name="flowdeck-fanout-updates"),
            asyncio.create_task(self._forward_revocations(), name="flowdeck-fanout-revocations"),
            asyncio.create_task(self._forward_notices(), name="flowdeck-fanout-notices"),
            asyncio.create_task(self._forward_due_times(), name="flowdeck-fanout-wakeups"),
            asyncio.create_task(self._receive(), name="flowdeck-fanout-in"),
            asyncio.create_task(self._beat(), name="flowdeck-fanout-heartbeat"),
        ]
        # Until every live process was heard (their answers to the hello, or their heartbeats), this one
        # does not know who watches what: its engine starts after that.
        await asyncio.sleep(self.watches.grace_left())

    async def stop(self) -> None:
        await cancel_and_wait(self._tasks)
        self._tasks.clear()
        await self._send(SHARED, {"bye": 1})  # the others forget this process's watches at once
        if self._publisher.watches is self.watches:
            self._publisher.watches = self._alone
        if self._stop_revocations is not None:
            self._stop_revocations()
            self._stop_revocations = None
        if self._stop_notices is not None:
            self._stop_notices()
            self._stop_notices = None
        if self._outgoing is not None:
            self._outgoing.close()
            self._outgoing = None
        await self.transport.close()

    def job_queued(self, due: float) -> None:
        """An orchestrator job listener: jobs were queued in this process, due at ``due``. A process alone
        (past its start-up grace) sends nothing: a process that starts later claims what is due as it starts."""
        if not self._others_may_listen():
            return
        self._due.add(round(due, 3))
        self._due_queued.set()

    # -- out ------------------------------------------------------------------------------------------
    async def _send(self, topic: str, body: dict[str, Any]) -> None:
        """Send, or drop it when the transport is unreachable: said once when that starts (with the
        error) and once when it ends (with how many were dropped), not once per message. What the other
        processes' clients missed meanwhile is in the log (their snapshots), and revocations are also
        checked on a timer (realtime/server.py)."""
        message = msgspec.json.encode({"from": self.origin, **body})
        try:
            async with self._send_lock:
                await self.transport.send(topic, message)
        except Exception:
            self._unsent += 1
            if self._unsent == 1:
                log.warning(
                    "could not send live messages to the other processes; dropping them until it works again",
                    exc_info=True,
                )
            return
        kind = message_kind(body)
        self.traffic.sent[kind] = self.traffic.sent.get(kind, 0) + 1
        if kind == "updates":
            self.traffic.updates_sent += len(body["updates"])
        if self._unsent:
            log.warning("sending live messages to the other processes again (%d could not be sent)", self._unsent)
            self._announce({"missed": self._unsent})  # their clients read what those said again
            self._unsent = 0

    def _announce(self, body: dict[str, Any], topic: str = SHARED) -> None:
        self._control.put_nowait((topic, body))

    async def _forward_control(self) -> None:
        while True:
            topic, body = await self._control.get()
            await self._send(topic, body)

    def _heartbeat(self, *, hello: bool = False) -> None:
        """Say this process is alive, with all it watches (in parts: the first replaces what was known)."""
        runs = self.watches.watched
        for start in range(0, max(len(runs), 1), _RUNS_PER_MESSAGE):
            body: dict[str, Any] = {"alive": 1, "watch": runs[start : start + _RUNS_PER_MESSAGE], "full": not start}
            if not self.hears_run_ends:
                body["ends"] = "failed"
            if hello and not start:
                body["hello"] = 1
            self._announce(body)

    async def _beat(self) -> None:
        while True:
            await asyncio.sleep(self.watches.heartbeat_seconds)
            self.watches.expire()
            self._heartbeat()

    async def _forward_updates(self, outgoing: Subscription) -> None:
        while True:
            batch = [await outgoing.get()]
            while len(batch) < _BATCH and not outgoing.queue.empty():
                batch.append(outgoing.queue.get_nowait())
            for topics, part in self._route(batch):  # decided at once, then sent in that order
                for topic in topics:
                    await self._send_updates(topic, part)

    def _wanted_elsewhere(self, update: Update) -> bool:
        """Asked as an update is published: only what another process may want is queued (and woken for),
        and ``_route`` decides again when it sends. A failed run's end is wanted while another process is
        alive, any other run end while one that hears run ends is; anything else while another process
        watches its run; everything in the start-up grace. An update published before this process heard of
        a watch was committed before it (publishing follows the commit), so the watcher's snapshot, read once
        this process acknowledged the watch, shows it; when the acknowledgement came too late for that, the
        watcher reads its runs again (``Watches``' ``late``)."""
        watches = self.watches
        if watches.in_grace:
            return True
        if isinstance(update, RunUpdate) and update.status in TERMINAL_RUN_STATUSES:
            if update.status is RunStatus.FAILED:
                return watches.others_alive()
            return bool(watches.end_listeners())
        return watches.watched_elsewhere(update.instance_id)

    def _others_may_listen(self) -> bool:
        """Another process is alive, or may be: in the start-up grace this one has not heard them all yet."""
        watches = self.watches
        return watches.in_grace or watches.others_alive()

    def _topics(self, update: Update) -> tuple[str, ...]:
        """Where an update goes: a failed run's end to every process (if any other is alive), any other run
        end to each process that hears run ends (the shared topic when every other does), anything else only
        to the processes watching its run; in the grace after this one started, when it may not yet know
        every process, to all."""
        watches = self.watches
        if isinstance(update, RunUpdate) and update.status in TERMINAL_RUN_STATUSES:
            if not self._wanted_elsewhere(update):
                return ()
            if update.status is RunStatus.FAILED or watches.in_grace:
                return (SHARED,)
            listeners = watches.end_listeners()
            return (SHARED,) if listeners == watches.alive() else tuple(sorted(listeners))
        targets = watches.targets(update.instance_id)
        return tuple(sorted(targets)) if targets or not watches.in_grace else (SHARED,)

    def _route(self, batch: list[Update]) -> list[tuple[tuple[str, ...], list[Update]]]:
        """The batch cut into runs of updates going to the same topics (``_topics``, decided again now:
        a process may have started or stopped watching since), in order."""
        routed: list[tuple[tuple[str, ...], list[Update]]] = []
        for update in batch:
            topics = self._topics(update)
            if not topics:
                continue
            if routed and routed[-1][0] == topics:
                routed[-1][1].append(update)
            else:
                routed.append((topics, [update]))
        return routed

    async def _send_updates(self, topic: str, updates: Sequence[Update]) -> None:
        for part in self._fitting([encode_update(update) for update in updates], list(updates)):
            await self._send(topic, {"updates": part})

    def _fitting(self, encoded: list[dict[str, Any]], updates: list[Update]) -> list[list[dict[str, Any]]]:
        """The batch cut into messages the transport carries; an update too large alone goes by reference."""
        limit = self.transport.max_message_bytes
        if limit is None or len(msgspec.json.encode({"from": self.origin, "updates": encoded})) <= limit:
            return [encoded]
        if len(encoded) == 1:
            return [[encode_update(updates[0], by_reference=True)]]
        half = len(encoded) // 2
        return self._fitting(encoded[:half], updates[:half]) + self._fitting(encoded[half:], updates[half:])

    def _queue_revocation(self, keys: tuple[str, ...]) -> None:
        if self._revoked.full():
            log.error("revocations are not reaching the other processes: %d dropped", len(keys))
            return
        self._revoked.put_nowait(keys)

    async def _forward_revocations(self) -> None:
        while True:
            keys = list(await self._revoked.get())
            while not self._revoked.empty():
                keys.extend(self._revoked.get_nowait())
            for start in range(0, len(keys), 50):  # a key is about 70 bytes: 50 fit any transport
                await self._send(SHARED, {"revoked": keys[start : start + 50]})

    def _queue_notice(self, notice: SavedNotice) -> None:
        if self._notices.full():
            log.error("saved-version notices are not reaching the other processes: one dropped")
            return
        self._notices.put_nowait(notice)

    async def _forward_notices(self) -> None:
        while True:
            notice = await self._notices.get()
            await self._send(SHARED, {"notices": [encode_notice(notice)]})

    async def _forward_due_times(self) -> None:
        while True:
            await self._due_queued.wait()
            self._due_queued.clear()
            due, self._due = sorted(self._due), set()
            await self._send(SHARED, {"due": due[:_DUE_TIMES_PER_MESSAGE]})

    # -- in -------------------------------------------------------------------------------------------
    def _deliver(self, message: bytes) -> None:
        if self._incoming.full():
            if not self._dropped:
                log.error("live messages from other processes are arriving faster than they are handled: dropping")
            self._dropped += 1
            self._publisher.missed()  # cheap: the gap's listeners coalesce (realtime/rejoins.py)
            return
        if self._dropped:
            log.error("%d live messages from other processes were dropped", self._dropped)
            self._dropped = 0
        self._incoming.put_nowait(message)

    async def _receive(self) -> None:
        while True:
            message = await self._incoming.get()
            try:
                await self._handle(message)
            except Exception:
                log.exception("could not handle a live message from another process")

    async def _handle(self, message: bytes) -> None:
        if message == MISSED:
            self._publisher.missed()
            return
        with contextlib.suppress(msgspec.DecodeError, KeyError, ValueError, TypeError, AttributeError):
            body = msgspec.json.decode(message)
            origin = body["from"]
            if origin == self.origin:
                return
            kind = message_kind(body)
            self.traffic.received[kind] = self.traffic.received.get(kind, 0) + 1
            if self.watches.heard(origin):  # taken for dead a while: what it watches was not sent to it
                self._announce({"missed": 1}, topic=origin)
            if "missed" in body:
                self._publisher.missed()
            elif "updates" in body:
                updates = [await self._complete(*decode_update(item)) for item in body["updates"]]
                self.traffic.updates_received += len(updates)
                self._publisher.publish(updates, relayed_from=self._outgoing)
            elif "revoked" in body:
                keys = [key for key in body["revoked"] if isinstance(key, str)]
                self._publisher.revoke(keys, skip=self._revocation_listener)
            elif "notices" in body:
                for item in body["notices"]:
                    self._publisher.notice(decode_notice(item), skip=self._notice_listener)
            elif "due" in body:
                for at in body["due"]:
                    for wake in self.wake_listeners:
                        wake(float(at))
            else:
                self._handle_watches(origin, body)

    def _handle_watches(self, origin: str, body: dict[str, Any]) -> None:
        """What another process said of the runs it watches (``engine/watches.py``)."""
        if "alive" in body:
            self.watches.add(origin, body["watch"], replace=body["full"])
            self.watches.hears_ends(origin, every=body.get("ends") != "failed")
            if "hello" in body:
                self._heartbeat()  # the newcomer learns at once who watches what
        elif "watch" in body:
            self.watches.add(origin, body["watch"])
            self._announce({"ack": body["seq"]}, topic=origin)
        elif "unwatch" in body:
            self.watches.remove(origin, body["unwatch"])
        elif "ack" in body:
            self.watches.acknowledged(origin, int(body["ack"]))
        elif "bye" in body:
            self.watches.gone(origin)

    async def _complete(self, update: Update, by_reference: bool) -> Update:
        if not by_reference or self._resolve is None:
            return update
        return await self._resolve(update)
