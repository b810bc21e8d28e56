"""A process that starts while PostgreSQL restarts waits for it, as a running process does (``Database._open``),
instead of exiting at its first connection: ``flowdeck serve`` and ``flowdeck worker`` call this first."""

from __future__ import annotations

import asyncio
import logging

import asyncpg  # type: ignore[import-untyped]
from sqlalchemy.engine import make_url

from flowdeck.storage.disconnects import DatabaseUnavailableError, is_disconnect
from flowdeck.storage.pg_connect import connect_args

__all__ = ("wait_until_reachable",)

log = logging.getLogger(__name__)

_FIRST_DELAY = 0.1
_LONGEST_DELAY = 2.0


async def wait_until_reachable(database_url: str, seconds: float) -> None:
    """Return once PostgreSQL takes a connection; wait for it up to ``seconds`` (FLOWDECK_DB_RECONNECT_SECONDS)
    while it refuses or is starting up, saying so. Nothing to wait for on SQLite; any other error (a wrong
    password, no such database) is raised at once."""
    if not make_url(database_url).drivername.startswith("postgresql"):
        return
    loop = asyncio.get_running_loop()
    deadline = loop.time() + seconds
    delay = _FIRST_DELAY
    while True:
        try:
            connection = await asyncpg.connect(**connect_args(database_url), timeout=max(1.0, seconds))
        except Exception as exc:
            if not is_disconnect(exc):
                raise
            if loop.time() + delay > deadline:
                raise DatabaseUnavailableError(
                    f"PostgreSQL took no connection for {seconds:g} s (FLOWDECK_DB_RECONNECT_SECONDS): {exc}"
                ) from exc
            log.warning("PostgreSQL takes no connections yet (%s); trying again in %.1f s", exc, delay)
            await asyncio.sleep(delay)
            delay = min(delay * 2, _LONGEST_DELAY)
            continue
        await connection.close()
        return
