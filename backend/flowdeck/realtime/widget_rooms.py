"""Widget rooms: embed pages that joined a widget hear ``widget_run_completed`` when a production run of its
workflow finishes, so a replay page refetches its data.

A task of its own reads finished-run updates from the publisher (runs only, bounded, dropping the oldest:
it never slows the engine). Updates do not carry the workflow, so a finished run's workflow is looked up,
once per run and only while some widget room has members, and kept in a small cache.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Final

import socketio  # type: ignore[import-untyped]

from flowdeck.domain.statuses import TERMINAL_RUN_STATUSES
from flowdeck.engine.publisher import Consumer, LocalPublisher, RunUpdate, Subscription
from flowdeck.realtime.messages import WIDGET_RUN_EVENT

__all__ = ("RunWorkflowLookup", "WidgetRooms", "widget_room")

log = logging.getLogger(__name__)

RunWorkflowLookup = Callable[[str], Awaitable[tuple[str | None, bool] | None]]
"""instance id -> (workflow id, is test), or None for an unknown run."""
_CACHE_SIZE: Final = 10_000


def widget_room(widget_id: str) -> str:
    return f"widget:{widget_id}"  # run rooms are bare ids, which never contain ":"


class WidgetRooms:
    def __init__(self, sio: socketio.AsyncServer, publisher: LocalPublisher, lookup: RunWorkflowLookup) -> None:
        self._sio = sio
        self._lookup = lookup
        self._members: dict[str, dict[str, set[str]]] = {}  # workflow id -> widget id -> sids
        self._workflows: dict[str, tuple[str | None, bool]] = {}  # run id -> (workflow, is test)
        self._consumer = Consumer(publisher, self._run, name="flowdeck-widget-rooms", maxsize=10_000, runs_only=True)

    def start(self) -> None:
        self._consumer.start()

    async def stop(self) -> None:
        await self._consumer.stop()

    async def join(self, sid: str, widget_id: str, workflow_id: str) -> None:
        await self._sio.enter_room(sid, widget_room(widget_id))
        self._members.setdefault(workflow_id, {}).setdefault(widget_id, set()).add(sid)

    def forget(self, sid: str) -> None:
        """A connection went away: drop it from every widget room it joined."""
        for workflow_id in list(self._members):
            widgets = self._members[workflow_id]
            for widget_id in list(widgets):
                widgets[widget_id].discard(sid)
                if not widgets[widget_id]:
                    del widgets[widget_id]
            if not widgets:
                del self._members[workflow_id]

    async def _run(self, subscription: Subscription) -> None:
        while True:
            update = await subscription.get()
            if not isinstance(update, RunUpdate) or update.status not in TERMINAL_RUN_STATUSES or not self._members:
                continue
            try:
                await self._announce(update)
            except Exception:
                log.exception("widget rooms: could not announce run %s", update.instance_id)

    async def _announce(self, update: RunUpdate) -> None:
        found = self._workflows.get(update.instance_id) or await self._lookup(update.instance_id)
        if found is None:
            return
        self._remember(update.instance_id, found)
        workflow_id, is_test = found
        if is_test or workflow_id is None:
            return
        for widget_id in list(self._members.get(workflow_id, {})):
            payload = {"widgetId": widget_id, "runId": update.instance_id, "status": update.status.value}
            await self._sio.emit(WIDGET_RUN_EVENT, payload, room=widget_room(widget_id))

    def _remember(self, instance_id: str, found: tuple[str | None, bool]) -> None:
        if instance_id not in self._workflows and len(self._workflows) >= _CACHE_SIZE:
            del self._workflows[next(iter(self._workflows))]
        self._workflows[instance_id] = found
