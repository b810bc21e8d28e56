"""A slow outside service the workload's ``http`` nodes call: it answers after a moment, so faults often hit a
node while its request is in flight (a worker killed or frozen mid-node), and it counts the calls it got. Each
answer carries a new ticket, as a payment provider's would: a node called twice has two different outputs."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from aiohttp import web

ANSWER_AFTER = 0.5  # seconds


class Partner:
    def __init__(self) -> None:
        self.calls = 0
        self.url = ""

    async def _slow(self, request: web.Request) -> web.Response:
        self.calls += 1
        await asyncio.sleep(ANSWER_AFTER)
        return web.json_response({"value": int(request.query["n"]) * 3, "ticket": uuid.uuid4().hex})

    @asynccontextmanager
    async def serving(self) -> AsyncIterator[Partner]:
        app = web.Application()
        app.router.add_get("/slow", self._slow)
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        self.url = f"http://127.0.0.1:{port}"
        try:
            yield self
        finally:
            await runner.cleanup()
