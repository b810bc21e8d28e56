"""``GET /api/health``: is the process up and the database answering (no authentication)."""

from __future__ import annotations

import sqlalchemy as sa
from litestar import get

from flowdeck.api.auth import PUBLIC
from flowdeck.api.dependencies import AppServices
from flowdeck.api.openapi import errors
from flowdeck.api.schemas import HealthOut

__all__ = ("health",)


@get("/api/health", opt={PUBLIC: True}, tags=["health"], raises=errors(public=True))
async def health(services: AppServices) -> HealthOut:
    try:
        async with services.engine.db.read() as conn:
            await conn.execute(sa.text("SELECT 1"))
        database = "ok"
    except Exception as exc:  # noqa: BLE001 -- the health answer reports it
        database = f"error: {type(exc).__name__}"
    return HealthOut(status="ok" if database == "ok" else "degraded", database=database)
