"""The Socket.IO server (SPEC §9): authenticated connections that join and leave the rooms of runs.

A connection authenticates once, with the session cookie or ``{"token": "<api token>"}`` in the
auth payload. ``workflow_run_join`` checks that the run belongs to the connection's tenant (an
unknown run and another tenant's run answer alike), sends ``workflow_run_snapshot``, then joins
the run's room; the relay sends every later update there, in order.
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
from flowdeck.realtime.messages import JOIN_EVENT, LEAVE_EVENT, SNAPSHOT_EVENT, snapshot_message
from flowdeck.realtime.relay import RunRelay

__all__ = ("RealtimeServer",)

log = logging.getLogger(__name__)

_RUN_ID: Final = re.compile(r"[A-Za-z0-9_-]{1,64}")
_NOT_FOUND: Final = {"ok": False, "error": "run not found"}


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
        self._principals: dict[str, Principal] = {}
        self.sio.on("connect", self._connect)
        self.sio.on("disconnect", self._disconnect)
        self.sio.on(JOIN_EVENT, self._join)
        self.sio.on(LEAVE_EVENT, self._leave)

    async def start(self, publisher: LocalPublisher) -> None:
        self.relay = RunRelay(self.sio, publisher)
        self.relay.start()

    async def stop(self) -> None:
        for sid in list(self._principals):
            await self.sio.disconnect(sid)
        if self.relay is not None:
            await self.relay.stop()
            self.relay = None

    async def _connect(self, sid: str, environ: dict[str, Any], auth: Any = None) -> None:
        if not self.context.running:
            raise socketio.exceptions.ConnectionRefusedError("the server is not ready")
        accounts = self.context.services.accounts
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
        if self.relay is not None:
            self.relay.cancel_join(sid)

    async def _join(self, sid: str, data: Any = None) -> dict[str, Any]:
        principal, run_id, relay = self._principals.get(sid), _run_id(data), self.relay
        if principal is None or relay is None or not self.context.running:
            return {"ok": False, "error": "not connected"}
        if run_id is None:
            return {"ok": False, "error": "runId is required"}
        queries = self.context.services.runs.queries
        await self.sio.leave_room(sid, run_id)  # joining again starts over, with a new snapshot
        relay.begin_join(sid, run_id)
        try:
            view = await queries.run_view(principal.tenant_id, run_id)
            if view is None:  # unknown, or another tenant's: the same answer
                return _NOT_FOUND
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
