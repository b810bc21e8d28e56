"""A request whose write lost its database connection before committing runs once more.

PostgreSQL may close a connection in the middle of a write transaction (a restart, a failover,
``pg_terminate_backend``); the transaction then never committed. If nothing else of the request
committed either (``storage/disconnects.WriteTrack``, kept by ``Database``), running the request
again is the same as the client sending it again: the 500 it would have answered is dropped and the
request runs once more, its body replayed. A request whose COMMIT itself was cut off (it may have
committed) runs once more only if it recognises a commit of its own when it runs again (it marks its
writes with the track's ``key``, the same in both runs: a resume of a ``wait`` node); otherwise it,
like one that committed something, answers as it did. docs/engine.md "Lost connections".
"""

from __future__ import annotations

import logging

from litestar.enums import ScopeType
from litestar.types import ASGIApp, Message, Receive, ReceiveMessage, Scope, Send

from flowdeck.storage.disconnects import WriteTrack, write_track

__all__ = ("replay_lost_writes",)

log = logging.getLogger(__name__)


def replay_lost_writes(app: ASGIApp) -> ASGIApp:
    async def middleware(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != ScopeType.HTTP:
            await app(scope, receive, send)
            return
        received: list[ReceiveMessage] = []

        async def recording() -> ReceiveMessage:
            message = await receive()
            received.append(message)
            return message

        replayed = iter(received)

        async def replaying() -> ReceiveMessage:
            return next(replayed, None) or await receive()

        track = WriteTrack()
        dropped = False

        async def first_send(message: Message) -> None:
            nonlocal dropped
            if message["type"] == "http.response.start" and message["status"] == 500:
                dropped = track.runs_again
            if not dropped:
                await send(message)

        token = write_track.set(track)
        try:
            await app(scope, recording, first_send)
        finally:
            write_track.reset(token)
        if dropped:
            log.warning("%s %s lost its database connection before committing or while it did: running it again",
                        scope.get("method"), scope["path"])  # fmt: skip
            token = write_track.set(WriteTrack(key=track.key))  # the same mark: it knows its own commit
            try:
                await app(scope, replaying, send)
            finally:
                write_track.reset(token)

    return middleware
