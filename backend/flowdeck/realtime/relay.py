"""The relay: forwards the engine's updates to the Socket.IO room of each run, in order. It never writes.

One task reads the updates of the runs someone here watches from the publisher (a bounded queue that
drops the oldest on overflow, so a slow relay can never stall the engine) and sends each to its run's
room. An update of a run nobody here watches or joins is left out as it is published (no queueing, no
wake-up): a client joining later reads a snapshot that shows it, since publishing follows the commit.
Sending encodes the packet once and puts it on each member's engine.io queue, in order and without
waiting for the event loop (``AsyncServer.emit`` would wait a whole loop turn per update, which under
load lets the relay fall seconds behind); a slow or vanished client's queue just grows until its ping
times out, so it cannot stall the relay either.

Joining a run must not lose or reorder anything: between reading the snapshot and entering the
room, updates of that run are buffered for the joiner; after the snapshot it gets those the
snapshot does not already show, then it enters the room with no await in between. A decision's
update is published a moment after it commits (after PostgreSQL's commit returns, or SQLite's group
commit in its thread), so a snapshot read in that moment already shows what the update then says:
for a few seconds after joining, the room's updates reach the joiner only if its snapshot does not
show them already (``_FRESH_SECONDS``), so it never sees a node go back.

Nodes run by other processes reach this one only for the runs its connections watch (``watch``, before
the snapshot is read; ``unwatch`` when they leave or disconnect): the publisher's ``watches`` tells them.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from typing import Any

import socketio  # type: ignore[import-untyped]
from socketio import packet as socketio_packet

from flowdeck.domain.statuses import node_progress
from flowdeck.engine.publisher import Consumer, LocalPublisher, NodeUpdate, RunUpdate, Subscription
from flowdeck.engine.recheck import node_of
from flowdeck.realtime.messages import update_message
from flowdeck.storage.run_queries import RunView

__all__ = ("RunRelay", "is_news")

log = logging.getLogger(__name__)

Update = NodeUpdate | RunUpdate
_NAMESPACE = "/"
_FRESH_SECONDS = 5.0


def is_news(update: Update, view: RunView) -> bool:
    """Whether a snapshot (``view``) does not already show ``update``.

    A node's updates only ever move it forward, by attempt and then by status (``node_progress``, from
    the status table in ``domain/statuses.py``), so a node update is news when it is further along
    than the node in the snapshot. Every run-level decision stamps the
    instance's ``updated_at`` with its own time, which its update carries as ``at``: a run update
    later than the snapshot's ``updated_at`` is not in it. A ``workflow`` node's call is a second update
    of the same progress (still RUNNING): it is news while the snapshot does not name the child run. So is
    an approval's counted decision (still WAITING) while the snapshot shows fewer decisions.
    """
    if isinstance(update, RunUpdate):
        return update.at > view.run.updated_at
    node = node_of(view, update)
    if node is None:
        return True
    progress, shown = node_progress(update.attempt, update.status), node_progress(node.attempt, node.status)
    if progress == shown and update.child_instance_id is not None:
        return update.child_instance_id != node.child_instance_id
    if progress == shown and update.waiting_for is not None:  # an approval's decisions so far, announced again
        return _decided(update.waiting_for) > _decided(node.waiting_for)
    return progress > shown


def _decided(waiting_for: Any) -> int:
    return len(waiting_for.get("decisions") or []) if isinstance(waiting_for, dict) else 0


class RunRelay:
    def __init__(self, sio: socketio.AsyncServer, publisher: LocalPublisher, *, queue_size: int = 100_000) -> None:
        self._sio = sio
        self._publisher = publisher
        self._watching: dict[str, set[str]] = {}
        """Connection -> the runs it watches (joined or joining)."""
        self._joining: dict[str, dict[str, list[Update]]] = {}
        self._fresh: dict[str, dict[str, tuple[RunView, float]]] = {}
        """Run -> connection -> (the snapshot it joined with, until when updates are checked against it)."""
        self._consumer = Consumer(
            publisher, self._run, name="flowdeck-socketio-relay", maxsize=queue_size, wants=self._watched_here
        )
        self._dropped = 0

    def start(self) -> None:
        self._consumer.start()

    async def stop(self) -> None:
        await self._consumer.stop()

    def _watched_here(self, update: Update) -> bool:
        """Asked as an update is published: whether a connection here is in its run's room or joining it."""
        run_id = update.instance_id
        if run_id in self._joining:
            return True
        return next(iter(self._sio.manager.get_participants(_NAMESPACE, run_id)), None) is not None

    async def _run(self, subscription: Subscription) -> None:
        while True:
            update = await subscription.get()
            if subscription.dropped != self._dropped:
                log.warning("socket.io relay fell behind: %d updates dropped", subscription.dropped - self._dropped)
                self._dropped = subscription.dropped
            try:
                await self._deliver(update)
            except Exception:
                log.exception("socket.io relay: could not deliver an update of run %s", update.instance_id)

    async def _deliver(self, update: Update) -> None:
        run_id = update.instance_id
        for buffer in self._joining.get(run_id, {}).values():
            buffer.append(update)
        participants = self._sio.manager.get_participants(_NAMESPACE, run_id)
        members = [eio_sid for sid, eio_sid in participants if self._not_shown(run_id, sid, update)]
        if members:
            await self._send(*update_message(update), members)

    def _not_shown(self, run_id: str, sid: str, update: Update) -> bool:
        """False when ``sid`` joined a moment ago with a snapshot that already shows ``update``."""
        fresh = self._fresh.get(run_id)
        if fresh is None:
            return True
        joined = fresh.get(sid)
        if joined is None:
            return True
        if time.monotonic() > joined[1]:
            del fresh[sid]
            if not fresh:
                del self._fresh[run_id]
            return True
        return is_news(update, joined[0])

    async def _send(self, event: str, payload: Mapping[str, Any], eio_sids: list[str]) -> None:
        encoded = self._sio.packet_class(socketio_packet.EVENT, namespace=_NAMESPACE, data=[event, payload]).encode()
        for eio_sid in eio_sids:
            await self._sio.eio.send(eio_sid, encoded)  # a put on the connection's queue: no wait

    async def send_to(self, sid: str, event: str, payload: Mapping[str, Any]) -> None:
        """Send one event to one connection, in order with everything the relay sends it."""
        eio_sid = self._sio.manager.eio_sid_from_sid(sid, _NAMESPACE)
        if eio_sid is not None:
            await self._send(event, payload, [eio_sid])

    # -- joining ---------------------------------------------------------------------------------------
    async def watch(self, sid: str, run_id: str) -> None:
        """Have the other processes send this one the run's node updates (returns once they know)."""
        runs = self._watching.setdefault(sid, set())
        if run_id not in runs:
            runs.add(run_id)
            await self._publisher.watches.watch(run_id)

    def followed(self) -> list[tuple[str, str]]:
        """(connection, run) for every run a connection watches."""
        return [(sid, run_id) for sid, runs in self._watching.items() for run_id in runs]

    def follows(self, sid: str, run_id: str) -> bool:
        return run_id in self._watching.get(sid, ())

    def unwatch(self, sid: str, run_id: str | None = None) -> None:
        """``sid`` no longer watches the run (any run: it disconnected)."""
        runs = self._watching.get(sid)
        if runs is None:
            return
        for run in [run_id] if run_id is not None else list(runs):
            if run in runs:
                runs.discard(run)
                self._publisher.watches.unwatch(run)
        if not runs:
            del self._watching[sid]

    def begin_join(self, sid: str, run_id: str) -> None:
        """From now on, updates of ``run_id`` are kept for ``sid`` until ``finish_join``."""
        self._joining.setdefault(run_id, {})[sid] = []

    async def finish_join(self, sid: str, run_id: str, view: RunView) -> None:
        """After the snapshot was sent: send the buffered news, then enter the room."""
        try:
            while True:
                buffers = self._joining.get(run_id, {})
                pending = buffers.get(sid)
                if pending is None:
                    return  # the client left or disconnected meanwhile
                if not pending:
                    break
                buffers[sid] = []
                for update in pending:
                    if is_news(update, view):
                        await self.send_to(sid, *update_message(update))
            # No await between the empty check and entering the room (the manager's enter_room does
            # not suspend): every update is either buffered above or emitted to the room after this.
            self.cancel_join(sid, run_id)
            await self._sio.enter_room(sid, run_id)
            self._fresh.setdefault(run_id, {})[sid] = (view, time.monotonic() + _FRESH_SECONDS)
        finally:
            self.cancel_join(sid, run_id)

    def cancel_join(self, sid: str, run_id: str | None = None) -> None:
        if run_id is None:  # the connection is gone
            for key in list(self._fresh):
                self._fresh[key].pop(sid, None)
                if not self._fresh[key]:
                    del self._fresh[key]
        for key in [run_id] if run_id is not None else list(self._joining):
            buffers = self._joining.get(key)
            if buffers is not None:
                buffers.pop(sid, None)
                if not buffers:
                    del self._joining[key]
