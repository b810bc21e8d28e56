"""The Socket.IO server (SPEC §9): authenticated connections that join and leave the rooms of runs.

A connection authenticates once, with the session cookie or ``{"token": "<api token>"}`` in the
auth payload. ``workflow_run_join`` checks that the run belongs to the connection's tenant (an
unknown run and another tenant's run answer alike), sends ``workflow_run_snapshot``, then joins
the run's room; the relay sends every later update there, in order.

An embed page connects with ``{"embedToken": "fde_..."}`` instead: such a connection reads one widget.
It may ``widget_join`` (then hears ``widget_run_completed`` when a production run of the widget's
workflow finishes) and ``workflow_run_join`` production runs of that workflow only.
"""

from __future__ import annotations

import logging
import re
from http.cookies import CookieError, SimpleCookie
from typing import Any, Final

import msgspec
import socketio  # type: ignore[import-untyped]

from flowdeck.accounts.principal import Principal
from flowdeck.api.auth import SESSION_COOKIE
from flowdeck.api.context import AppContext
from flowdeck.engine.publisher import LocalPublisher
from flowdeck.realtime.messages import (
    JOIN_EVENT,
    LEAVE_EVENT,
    SNAPSHOT_EVENT,
    WIDGET_JOIN_EVENT,
    snapshot_message,
)
from flowdeck.realtime.relay import RunRelay
from flowdeck.realtime.widget_rooms import WidgetRooms
from flowdeck.storage.widgets import WidgetRecord

__all__ = ("RealtimeServer",)

log = logging.getLogger(__name__)

_RUN_ID: Final = re.compile(r"[A-Za-z0-9_-]{1,64}")
_NOT_FOUND: Final = {"ok": False, "error": "run not found"}
_NO_WIDGET: Final = {"ok": False, "error": "widget not found"}


class _Json:
    """The JSON codec python-socketio uses for packets: msgspec, faster than the standard library."""

    _encoder = msgspec.json.Encoder()

    @classmethod
    def dumps(cls, obj: Any, **_: Any) -> str:
        return cls._encoder.encode(obj).decode()

    @staticmethod
    def loads(data: str | bytes, **_: Any) -> Any:
        return msgspec.json.decode(data)


def _cookie(environ: dict[str, Any], name: str) -> str | None:
    try:
        morsel = SimpleCookie(environ.get("HTTP_COOKIE", "")).get(name)
    except CookieError:
        return None
    return None if morsel is None else morsel.value


def _run_id(data: Any) -> str | None:
    run_id = data.get("runId") if isinstance(data, dict) else None
    return run_id if isinstance(run_id, str) and _RUN_ID.fullmatch(run_id) else None


class RealtimeServer:
    def __init__(self, context: AppContext) -> None:
        self.context = context
        self.sio = socketio.AsyncServer(async_mode="asgi", json=_Json)
        self.relay: RunRelay | None = None
        self.widget_rooms: WidgetRooms | None = None
        self._principals: dict[str, Principal] = {}
        self._embeds: dict[str, WidgetRecord] = {}
        """Connections opened with an embed token: the one widget each may read."""
        self.sio.on("connect", self._connect)
        self.sio.on("disconnect", self._disconnect)
        self.sio.on(JOIN_EVENT, self._join)
        self.sio.on(LEAVE_EVENT, self._leave)
        self.sio.on(WIDGET_JOIN_EVENT, self._widget_join)

    def connection_count(self) -> int:
        return len(self._principals) + len(self._embeds)

    async def start(self, publisher: LocalPublisher) -> None:
        self.relay = RunRelay(self.sio, publisher)
        self.relay.start()
        self.widget_rooms = WidgetRooms(self.sio, publisher, self.context.services.widgets.store.run_workflow)
        self.widget_rooms.start()

    async def stop(self) -> None:
        for sid in [*self._principals, *self._embeds]:
            await self.sio.disconnect(sid)
        if self.relay is not None:
            await self.relay.stop()
            self.relay = None
        if self.widget_rooms is not None:
            await self.widget_rooms.stop()
            self.widget_rooms = None

    async def _connect(self, sid: str, environ: dict[str, Any], auth: Any = None) -> None:
        if not self.context.running:
            raise socketio.exceptions.ConnectionRefusedError("the server is not ready")
        accounts = self.context.services.accounts
        embed_token = auth.get("embedToken") if isinstance(auth, dict) else None
        if isinstance(embed_token, str):
            access = await self.context.services.widgets.open_embed(embed_token)
            if access.widget is None:
                raise socketio.exceptions.ConnectionRefusedError(f"the embed token is {access.state}")
            self._embeds[sid] = access.widget
            return
        token = auth.get("token") if isinstance(auth, dict) else None
        principal = None
        if isinstance(token, str):
            principal = await accounts.authenticate_token(token)
        elif (cookie := _cookie(environ, SESSION_COOKIE)) is not None:
            principal = await accounts.authenticate_session(cookie)
        if principal is None:
            raise socketio.exceptions.ConnectionRefusedError("authentication failed: sign in or pass {token}")
        self._principals[sid] = principal

    async def _disconnect(self, sid: str, *_: Any) -> None:
        self._principals.pop(sid, None)
        self._embeds.pop(sid, None)
        if self.relay is not None:
            self.relay.cancel_join(sid)
        if self.widget_rooms is not None:
            self.widget_rooms.forget(sid)

    async def _join(self, sid: str, data: Any = None) -> dict[str, Any]:
        tenant_id, widget, run_id, relay = self._tenant(sid), self._embeds.get(sid), _run_id(data), self.relay
        if tenant_id is None or relay is None or not self.context.running:
            return {"ok": False, "error": "not connected"}
        if run_id is None:
            return {"ok": False, "error": "runId is required"}
        queries = self.context.services.runs.queries
        await self.sio.leave_room(sid, run_id)  # joining again starts over, with a new snapshot
        relay.begin_join(sid, run_id)
        try:
            view = await queries.run_view(tenant_id, run_id)
            if view is None:  # unknown, or another tenant's: the same answer
                return _NOT_FOUND
            if widget is not None and (view.run.workflow_id != widget.workflow_id or view.run.is_test):
                return _NOT_FOUND  # an embed connection reads production runs of its widget's workflow only
            await relay.send_to(sid, SNAPSHOT_EVENT, snapshot_message(view))
            await relay.finish_join(sid, run_id, view)
        finally:
            relay.cancel_join(sid, run_id)
        return {"ok": True}

    async def _leave(self, sid: str, data: Any = None) -> dict[str, Any]:
        run_id = _run_id(data)
        if run_id is None:
            return {"ok": False, "error": "runId is required"}
        if self.relay is not None:
            self.relay.cancel_join(sid, run_id)
        await self.sio.leave_room(sid, run_id)
        return {"ok": True}

    def _tenant(self, sid: str) -> str | None:
        principal, widget = self._principals.get(sid), self._embeds.get(sid)
        if principal is not None:
            return principal.tenant_id
        return None if widget is None else widget.tenant_id

    async def _widget_join(self, sid: str, data: Any = None) -> dict[str, Any]:
        """``{token}``: hear ``widget_run_completed`` for the token's widget (an embed connection: its own only)."""
        tenant_id, rooms = self._tenant(sid), self.widget_rooms
        if tenant_id is None or rooms is None or not self.context.running:
            return {"ok": False, "error": "not connected"}
        token = data.get("token") if isinstance(data, dict) else None
        if not isinstance(token, str):
            return {"ok": False, "error": "token is required"}
        access = await self.context.services.widgets.open_embed(token)
        widget, own = access.widget, self._embeds.get(sid)
        if widget is None or widget.tenant_id != tenant_id or (own is not None and own.id != widget.id):
            return _NO_WIDGET
        await rooms.join(sid, widget.id, widget.workflow_id)
        return {"ok": True}
