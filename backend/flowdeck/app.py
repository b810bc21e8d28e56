"""The ASGI application: Litestar with the engine (and its embedded worker) in its lifespan."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import sqlalchemy as sa
from litestar import Litestar, get
from litestar.datastructures import State

from flowdeck.runtime import Runtime, open_runtime
from flowdeck.settings import Settings

__all__ = ("create_app",)


@get("/api/health", sync_to_thread=False, opt={"public": True})
async def health(state: State) -> dict[str, str]:
    runtime: Runtime = state.runtime
    try:
        async with runtime.db.read() as conn:
            await conn.execute(sa.text("SELECT 1"))
        database = "ok"
    except Exception as exc:  # noqa: BLE001 -- the health answer reports it
        database = f"error: {type(exc).__name__}"
    return {"status": "ok" if database == "ok" else "degraded", "database": database}


def create_app(settings: Settings, *, with_worker: bool = True) -> Litestar:
    @asynccontextmanager
    async def lifespan(app: Litestar) -> AsyncIterator[None]:
        async with open_runtime(settings, with_worker=with_worker, migrate=settings.is_sqlite) as runtime:
            app.state.runtime = runtime
            yield

    return Litestar(route_handlers=[health], lifespan=[lifespan])
