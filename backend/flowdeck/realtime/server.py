"""The Socket.IO server (SPEC §9): authenticated connections that join and leave the rooms of runs.

A connection authenticates once, with the session cookie or ``{"token": "<api token>"}`` in the
auth payload. ``workflow_run_join`` checks that the run belongs to the connection's tenant (an
unknown run and another tenant's run answer alike), sends ``workflow_run_snapshot``, then joins
the run's room; the relay sends every later update there, in order.

An embed page connects with ``{"embedToken": "fde_..."}`` instead: such a connection reads one widget's
processed data and nothing else. It may ``widget_join`` (then hears ``widget_data`` when a production run
changes what the widget shows) and ``widget_follow`` a run of its widget (then hears that run's
``widget_data`` once it finishes); ``workflow_run_join`` is refused to it (``widget_rooms.py``).

Every connection is held under the keys of the credential it came with (``accounts/revocation.py``):
when the publisher announces one revoked (in this process or, through Redis, in another), its
connections are closed at once. Every ``live_check_seconds`` the held credentials are also checked in
the database (``accounts/live_check.py``): one that expired meanwhile closes its connections too.

An editor ``workflow_join``s the workflow it edits and hears ``workflow_saved`` whenever a version of it
is saved: the publisher's notices, made in this process or (through the fan-out) in another.
"""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import Callable
from http.cookies import CookieError, SimpleCookie
from typing import Any, Final

import msgspec
import socketio  # type: ignore[import-untyped]

from flowdeck.accounts.credentials import SESSION_COOKIE
from flowdeck.accounts.principal import Principal
from flowdeck.accounts.revocation import embed_token_key, principal_keys, widget_key, workflow_key
from flowdeck.engine.publisher import LocalPublisher, SavedNotice
from flowdeck.realtime.backend import LiveBackend
from flowdeck.realtime.messages import (
    JOIN_EVENT,
    LEAVE_EVENT,
    SNAPSHOT_EVENT,
    WIDGET_FOLLOW_EVENT,
    WIDGET_JOIN_EVENT,
    WORKFLOW_JOIN_EVENT,
    WORKFLOW_LEAVE_EVENT,
    WORKFLOW_SAVED_EVENT,
    snapshot_message,
)
from flowdeck.realtime.rejoins import Rejoins
from flowdeck.realtime.relay import RunRelay
from flowdeck.realtime.widget_rooms import WidgetRooms
from flowdeck.storage.widgets import WidgetRecord

__all__ = ("RealtimeServer",)

log = logging.getLogger(__name__)

_RUN_ID: Final = re.compile(r"[A-Za-z0-9_-]{1,64}")
_NOT_FOUND: Final = {"ok": False, "error": "run not found"}
_NO_WIDGET: Final = {"ok": False, "error": "widget not found"}
_NOT_CONNECTED: Final = {"ok": False, "error": "not connected"}
_EMBED_NO_RUNS: Final = {"ok": False, "error": "an embed connection reads its widget's data only (widget_follow)"}
_REMEMBERED_REVOCATIONS: Final = 10_000
_CHECK_BATCH: Final = 500


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


_WORKFLOW_ID: Final = re.compile(r"[A-Za-z0-9_-]{1,64}")


def _workflow_room(tenant_id: str, workflow_id: str) -> str:
    return f"workflow:{tenant_id}:{workflow_id}"  # never a run's room: run ids have no colon


def _run_id(data: Any) -> str | None:
    run_id = data.get("runId") if isinstance(data, dict) else None
    return run_id if isinstance(run_id, str) and _RUN_ID.fullmatch(run_id) else None


def _embed_keys(token_id: str | None, widget: WidgetRecord) -> tuple[str, ...]:
    keys = (widget_key(widget.id), workflow_key(widget.workflow_id))
    return keys if token_id is None else (embed_token_key(token_id), *keys)


class RealtimeServer:
    def __init__(self, backend: LiveBackend, *, live_check_seconds: float = 30.0) -> None:
        self.backend = backend
        self.live_check_seconds = live_check_seconds
        self.sio = socketio.AsyncServer(async_mode="asgi", json=_Json)
        self.relay: RunRelay | None = None
        self._rejoins: Rejoins[tuple[str, str]] = Rejoins(self._followed, self._rejoin)
        self.widget_rooms: WidgetRooms | None = None
        self._principals: dict[str, Principal] = {}
        self._embeds: dict[str, WidgetRecord] = {}
        """Connections opened with an embed token: the one widget each may read."""
        self._held: dict[str, set[str]] = {}
        """Credential key -> the connections that hold it."""
        self._keys: dict[str, tuple[str, ...]] = {}
        self._revoked: dict[str, None] = {}
        """Keys revoked lately (oldest first): a connection authenticated just before its credential's
        revocation was announced is refused, not kept."""
        self._closing: set[asyncio.Task[None]] = set()
        self._stop_listening: list[Callable[[], None]] = []
        self._checker: asyncio.Task[None] | None = None
        self.sio.on("connect", self._connect)
        self.sio.on("disconnect", self._disconnect)
        self.sio.on(JOIN_EVENT, self._join)
        self.sio.on(LEAVE_EVENT, self._leave)
        self.sio.on(WIDGET_JOIN_EVENT, self._widget_join)
        self.sio.on(WIDGET_FOLLOW_EVENT, self._widget_follow)
        self.sio.on(WORKFLOW_JOIN_EVENT, self._workflow_join)
        self.sio.on(WORKFLOW_LEAVE_EVENT, self._workflow_leave)

    def connection_count(self) -> int:
        return len(self._principals) + len(self._embeds)

    async def start(self, publisher: LocalPublisher) -> None:
        self.relay = RunRelay(self.sio, publisher)
        self.relay.start()
        self.widget_rooms = WidgetRooms(self.sio, publisher, self.backend)
        self.widget_rooms.start()
        self._stop_listening = [
            publisher.on_revoke(self._on_revoke),
            publisher.on_notice(self._on_saved),
            publisher.on_gap(self._rejoins.gap),
            publisher.on_gap(self.widget_rooms.gap),
        ]
        self._checker = asyncio.create_task(self._check_credentials(), name="flowdeck-live-credentials")

    async def stop(self) -> None:
        for stop_listening in self._stop_listening:
            stop_listening()
        self._stop_listening = []
        await self._rejoins.stop()
        if self._checker is not None:
            self._checker.cancel()
            await asyncio.gather(self._checker, return_exceptions=True)
            self._checker = None
        for sid in [*self._principals, *self._embeds]:
            await self.sio.disconnect(sid)
        if self._closing:
            await asyncio.gather(*self._closing, return_exceptions=True)
        if self.relay is not None:
            await self.relay.stop()
            self.relay = None
        if self.widget_rooms is not None:
            await self.widget_rooms.stop()
            self.widget_rooms = None

    # -- connections and their credentials ------------------------------------------------------------
    async def _connect(self, sid: str, environ: dict[str, Any], auth: Any = None) -> None:
        if not self.backend.running:
            raise socketio.exceptions.ConnectionRefusedError("the server is not ready")
        embed_token = auth.get("embedToken") if isinstance(auth, dict) else None
        if isinstance(embed_token, str):
            access = await self.backend.open_embed(embed_token)
            if access.widget is None:
                raise socketio.exceptions.ConnectionRefusedError(f"the embed token is {access.state}")
            self._hold(sid, _embed_keys(access.token_id, access.widget))
            self._embeds[sid] = access.widget
            return
        token = auth.get("token") if isinstance(auth, dict) else None
        principal = None
        if isinstance(token, str):
            principal = await self.backend.authenticate_token(token)
        elif (cookie := _cookie(environ, SESSION_COOKIE)) is not None:
            principal = await self.backend.authenticate_session(cookie)
        if principal is None:
            raise socketio.exceptions.ConnectionRefusedError("authentication failed: sign in or pass {token}")
        self._hold(sid, principal_keys(principal))
        self._principals[sid] = principal

    def _hold(self, sid: str, keys: tuple[str, ...]) -> None:
        if any(key in self._revoked for key in keys):  # revoked while it was being checked
            raise socketio.exceptions.ConnectionRefusedError("the credential was revoked")
        self._keys[sid] = keys
        for key in keys:
            self._held.setdefault(key, set()).add(sid)

    def _forget(self, sid: str) -> None:
        """The connection may do nothing more (it is closing)."""
        self._principals.pop(sid, None)
        self._embeds.pop(sid, None)
        for key in self._keys.pop(sid, ()):
            holders = self._held.get(key)
            if holders is not None:
                holders.discard(sid)
                if not holders:
                    del self._held[key]
        if self.relay is not None:
            self.relay.cancel_join(sid)
            self.relay.unwatch(sid)
        if self.widget_rooms is not None:
            self.widget_rooms.forget(sid)

    def _on_revoke(self, keys: tuple[str, ...]) -> None:
        """Close every connection that holds one of ``keys`` (a publisher listener: it never waits)."""
        for key in keys:
            self._revoked[key] = None
            for sid in list(self._held.get(key, ())):
                self._forget(sid)
                task = asyncio.get_running_loop().create_task(self.sio.disconnect(sid), name="flowdeck-revoked")
                self._closing.add(task)
                task.add_done_callback(self._closing.discard)
        while len(self._revoked) > _REMEMBERED_REVOCATIONS:
            del self._revoked[next(iter(self._revoked))]

    async def _check_credentials(self) -> None:
        """Close the connections whose credential expired (or was revoked unannounced), now and then."""
        while True:
            await asyncio.sleep(self.live_check_seconds)
            held = list(self._held)
            for start in range(0, len(held), _CHECK_BATCH):
                batch = held[start : start + _CHECK_BATCH]
                try:
                    live = await self.backend.live_credentials(batch)
                except Exception:
                    log.exception("could not check the credentials of live connections")
                    break
                ended = tuple(key for key in batch if key not in live)
                if ended:
                    self._on_revoke(ended)

    async def _disconnect(self, sid: str, *_: Any) -> None:
        self._forget(sid)

    def _tenant(self, sid: str) -> str | None:
        principal, widget = self._principals.get(sid), self._embeds.get(sid)
        if principal is not None:
            return principal.tenant_id
        return None if widget is None else widget.tenant_id

    # -- runs --------------------------------------------------------------------------------------------
    async def _join(self, sid: str, data: Any = None) -> dict[str, Any]:
        principal, run_id, relay = self._principals.get(sid), _run_id(data), self.relay
        if sid in self._embeds:
            return _EMBED_NO_RUNS
        if principal is None or relay is None or not self.backend.running:
            return _NOT_CONNECTED
        if run_id is None:
            return {"ok": False, "error": "runId is required"}
        return await self._follow(sid, principal, run_id, relay, after_gap=False)

    def _followed(self) -> list[tuple[str, str]]:
        return [] if self.relay is None else self.relay.followed()

    async def _rejoin(self, follower: tuple[str, str]) -> None:
        """Send a follower of the run a fresh snapshot, as its own join again would (rejoins.py)."""
        sid, run_id = follower
        principal, relay = self._principals.get(sid), self.relay
        if principal is not None and relay is not None and self.backend.running and relay.follows(sid, run_id):
            await self._follow(sid, principal, run_id, relay, after_gap=True)

    async def _follow(
        self, sid: str, principal: Principal, run_id: str, relay: RunRelay, *, after_gap: bool
    ) -> dict[str, Any]:
        """Watch the run and send its snapshot. A join that fails stops watching; a rejoin after a gap that
        fails keeps watching, for its next try."""
        await self.sio.leave_room(sid, run_id)  # joining again starts over, with a new snapshot
        relay.begin_join(sid, run_id)
        keep_watching = False
        try:
            await relay.watch(sid, run_id)  # before the snapshot: what it does not show yet reaches us
            view = await self.backend.run_view(principal.tenant_id, run_id)
            if view is None:  # unknown, or another tenant's: the same answer
                return _NOT_FOUND
            if sid not in self._principals:
                return _NOT_CONNECTED  # revoked while the snapshot was read
            await relay.send_to(sid, SNAPSHOT_EVENT, snapshot_message(view))
            await relay.finish_join(sid, run_id, view)
            keep_watching = True
        except Exception:
            keep_watching = after_gap
            raise
        finally:
            relay.cancel_join(sid, run_id)
            if not keep_watching:
                relay.unwatch(sid, run_id)
        return {"ok": True}

    async def _leave(self, sid: str, data: Any = None) -> dict[str, Any]:
        run_id = _run_id(data)
        if run_id is None:
            return {"ok": False, "error": "runId is required"}
        if self.relay is not None:
            self.relay.cancel_join(sid, run_id)
            self.relay.unwatch(sid, run_id)
        await self.sio.leave_room(sid, run_id)
        return {"ok": True}

    # -- workflows being edited -----------------------------------------------------------------------------
    async def _workflow_join(self, sid: str, data: Any = None) -> dict[str, Any]:
        """``{workflowId}``: hear ``workflow_saved`` for it (a workflow of the connection's tenant only)."""
        principal = self._principals.get(sid)
        if principal is None or not self.backend.running:
            return _EMBED_NO_RUNS if sid in self._embeds else _NOT_CONNECTED
        workflow_id = data.get("workflowId") if isinstance(data, dict) else None
        if not isinstance(workflow_id, str) or not _WORKFLOW_ID.fullmatch(workflow_id):
            return {"ok": False, "error": "workflowId is required"}
        if not await self.backend.owns_workflow(principal.tenant_id, workflow_id):
            return {"ok": False, "error": "no such workflow"}  # unknown or another tenant's: the same answer
        if sid not in self._principals:
            return _NOT_CONNECTED  # revoked meanwhile
        await self.sio.enter_room(sid, _workflow_room(principal.tenant_id, workflow_id))
        return {"ok": True}

    async def _workflow_leave(self, sid: str, data: Any = None) -> dict[str, Any]:
        principal = self._principals.get(sid)
        workflow_id = data.get("workflowId") if isinstance(data, dict) else None
        if not isinstance(workflow_id, str):
            return {"ok": False, "error": "workflowId is required"}
        if principal is not None:
            await self.sio.leave_room(sid, _workflow_room(principal.tenant_id, workflow_id))
        return {"ok": True}

    def _on_saved(self, notice: SavedNotice) -> None:
        """Tell the editors of the workflow connected to this process that a version was saved (a publisher
        listener: it never waits)."""
        payload = {
            "workflowId": notice.workflow_id,
            "version": notice.version,
            "author": notice.author,
            "message": notice.message,
        }
        room = _workflow_room(notice.tenant_id, notice.workflow_id)
        task = asyncio.get_running_loop().create_task(self.sio.emit(WORKFLOW_SAVED_EVENT, payload, room=room))
        self._closing.add(task)
        task.add_done_callback(self._closing.discard)

    # -- widgets -----------------------------------------------------------------------------------------
    async def _widget_join(self, sid: str, data: Any = None) -> dict[str, Any]:
        """``{token}``: hear ``widget_data`` for the token's widget (an embed connection: its own only)."""
        tenant_id, rooms = self._tenant(sid), self.widget_rooms
        if tenant_id is None or rooms is None or not self.backend.running:
            return _NOT_CONNECTED
        token = data.get("token") if isinstance(data, dict) else None
        if not isinstance(token, str):
            return {"ok": False, "error": "token is required"}
        access = await self.backend.open_embed(token)
        widget, own = access.widget, self._embeds.get(sid)
        if widget is None or widget.tenant_id != tenant_id or (own is not None and own.id != widget.id):
            return _NO_WIDGET
        if self._tenant(sid) is None:
            return _NOT_CONNECTED  # revoked meanwhile
        await rooms.join(sid, widget)
        return {"ok": True}

    async def _widget_follow(self, sid: str, data: Any = None) -> dict[str, Any]:
        """``{runId}``: an embed connection hears that run's ``widget_data`` when it finishes (at once if it has)."""
        widget, run_id, rooms = self._embeds.get(sid), _run_id(data), self.widget_rooms
        if widget is None or rooms is None or not self.backend.running:
            return _NOT_CONNECTED
        if run_id is None:
            return {"ok": False, "error": "runId is required"}
        if not await rooms.follow(sid, widget, run_id):
            return _NOT_FOUND
        return {"ok": True}
