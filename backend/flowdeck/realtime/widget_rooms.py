"""Widget rooms: what an embed page hears. Only the widget's processed data, never a run's input or nodes.

- A connection that joined a *replay* widget hears ``widget_data`` (what ``GET /embed/{token}/data``
  answers: the latest COMPLETED production run, processed) each time a production run of the widget's
  workflow completes.
- A connection that follows a run of its *sync* widget (``widget_follow {runId}``: the page's own run, which
  outlived ``waitSeconds``) hears that run's ``widget_data`` once, when it finishes.

A task of its own reads finished-run updates from the publisher (runs only, bounded, dropping the oldest:
it never slows the engine). Updates do not carry the workflow, so a finished run's workflow is looked up,
once per run and only while some widget room has members, and kept in a small cache. Updates that
arrive together are handled together: each widget's data is computed once per batch, not once per run.

After a gap in the updates from other processes (``LocalPublisher.missed``), every replay widget's room is
sent its data again and every followed run is read again (``Rejoins``): a run that finished meanwhile is
not waited for in vain.
"""

from __future__ import annotations

import logging
from typing import Final

import socketio  # type: ignore[import-untyped]

from flowdeck.domain.statuses import TERMINAL_RUN_STATUSES, RunStatus
from flowdeck.engine.publisher import Consumer, LocalPublisher, RunUpdate, Subscription
from flowdeck.realtime.backend import LiveBackend, WidgetAnswer
from flowdeck.realtime.messages import WIDGET_DATA_EVENT
from flowdeck.realtime.rejoins import Rejoins
from flowdeck.storage.widgets import WidgetRecord

__all__ = ("WidgetRooms", "widget_room")

log = logging.getLogger(__name__)

_CACHE_SIZE: Final = 10_000


Shown = str | tuple[str, str]
"""What a gap makes stale: a replay widget (its id), or a run a connection follows (connection, run)."""


def widget_room(widget_id: str) -> str:
    return f"widget:{widget_id}"  # run rooms are bare ids, which never contain ":"


class WidgetRooms:
    def __init__(self, sio: socketio.AsyncServer, publisher: LocalPublisher, backend: LiveBackend) -> None:
        self._sio = sio
        self._backend = backend
        self._members: dict[str, dict[str, set[str]]] = {}  # workflow id -> replay widget id -> sids
        self._widgets: dict[str, WidgetRecord] = {}  # widget id -> widget, while its room has members
        self._follows: dict[str, dict[str, WidgetRecord]] = {}  # run id -> sid -> the sid's (sync) widget
        self._workflows: dict[str, tuple[str | None, bool]] = {}  # run id -> (workflow, is test)
        self._consumer = Consumer(publisher, self._run, name="flowdeck-widget-rooms", maxsize=10_000, runs_only=True)
        self._gaps: Rejoins[Shown] = Rejoins(self._shown, self._send_again)

    def start(self) -> None:
        self._consumer.start()

    async def stop(self) -> None:
        await self._gaps.stop()
        await self._consumer.stop()

    def gap(self) -> None:
        """Finished runs may have gone unheard: send what every room and follower shows again."""
        self._gaps.gap()

    async def join(self, sid: str, widget: WidgetRecord) -> None:
        """Hear the widget's new data (a sync widget's room hears nothing: its runs are followed one by one)."""
        await self._sio.enter_room(sid, widget_room(widget.id))
        if widget.mode == "replay":
            self._widgets[widget.id] = widget
            self._members.setdefault(widget.workflow_id, {}).setdefault(widget.id, set()).add(sid)

    async def follow(self, sid: str, widget: WidgetRecord, run_id: str) -> bool:
        """Send ``sid`` the run's widget data when it finishes; ``False`` when it is not a run of the widget."""
        self._follows.setdefault(run_id, {})[sid] = widget  # before reading: a finish meanwhile is not missed
        answer = await self._backend.widget_answer(widget, run_id)
        if answer is None:
            self._unfollow(run_id, sid)
            return False
        await self._send_if_finished(sid, run_id, answer)
        return True

    async def _send_if_finished(self, sid: str, run_id: str, answer: WidgetAnswer) -> None:
        if answer["status"] != "running" and self._unfollow(run_id, sid):
            await self._sio.emit(WIDGET_DATA_EVENT, answer, to=sid)

    def _unfollow(self, run_id: str, sid: str) -> bool:
        followers = self._follows.get(run_id, {})
        found = followers.pop(sid, None) is not None
        if not followers:
            self._follows.pop(run_id, None)
        return found

    def forget(self, sid: str) -> None:
        """A connection went away: drop it from every widget room it joined and every run it followed."""
        for workflow_id in list(self._members):
            widgets = self._members[workflow_id]
            for widget_id in list(widgets):
                widgets[widget_id].discard(sid)
                if not widgets[widget_id]:
                    del widgets[widget_id]
                    self._widgets.pop(widget_id, None)
            if not widgets:
                del self._members[workflow_id]
        for run_id in list(self._follows):
            self._unfollow(run_id, sid)

    async def _run(self, subscription: Subscription) -> None:
        while True:
            finished = [await subscription.get()]
            while not subscription.queue.empty():
                finished.append(subscription.queue.get_nowait())
            try:
                await self._announce([u for u in finished if isinstance(u, RunUpdate)])
            except Exception:
                log.exception("widget rooms: could not announce %d finished runs", len(finished))

    async def _announce(self, updates: list[RunUpdate]) -> None:
        done = [u for u in updates if u.status in TERMINAL_RUN_STATUSES]
        for update in done:
            if update.instance_id in self._follows:
                await self._send_followers(update.instance_id)
        refresh: set[str] = set()
        for update in done:
            if update.status is RunStatus.COMPLETED and self._members:
                workflow_id = await self._production_workflow(update.instance_id)
                if workflow_id in self._members:
                    refresh.add(workflow_id)
        for workflow_id in refresh:
            for widget_id in list(self._members.get(workflow_id, {})):
                await self._send_replay(widget_id)

    async def _send_replay(self, widget_id: str) -> None:
        widget = self._widgets.get(widget_id)
        answer = None if widget is None else await self._backend.widget_answer(widget, None)
        if answer is not None:
            await self._sio.emit(WIDGET_DATA_EVENT, answer, room=widget_room(widget_id))

    def _shown(self) -> list[Shown]:
        following = [(sid, run_id) for run_id, followers in self._follows.items() for sid in followers]
        return [*self._widgets, *following]

    async def _send_again(self, shown: Shown) -> None:
        if isinstance(shown, str):
            await self._send_replay(shown)
            return
        sid, run_id = shown
        widget = self._follows.get(run_id, {}).get(sid)
        answer = None if widget is None else await self._backend.widget_answer(widget, run_id)
        if answer is not None:
            await self._send_if_finished(sid, run_id, answer)

    async def _send_followers(self, run_id: str) -> None:
        answers: dict[str, WidgetAnswer | None] = {}
        for sid, widget in list(self._follows.pop(run_id, {}).items()):
            if widget.id not in answers:
                answers[widget.id] = await self._backend.widget_answer(widget, run_id)
            answer = answers[widget.id]
            if answer is not None:
                await self._sio.emit(WIDGET_DATA_EVENT, answer, to=sid)

    async def _production_workflow(self, instance_id: str) -> str | None:
        found = self._workflows.get(instance_id) or await self._backend.run_workflow(instance_id)
        if found is None:
            return None
        if instance_id not in self._workflows and len(self._workflows) >= _CACHE_SIZE:
            del self._workflows[next(iter(self._workflows))]
        self._workflows[instance_id] = found
        workflow_id, is_test = found
        return None if is_test else workflow_id
