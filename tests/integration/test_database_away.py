"""PostgreSQL away for longer than FLOWDECK_DB_RECONNECT_SECONDS: the statement fails with an error naming
the setting (the API answers 503 with Retry-After), after waiting that long, not at once."""

from __future__ import annotations

import socket
import time

import pytest
import sqlalchemy as sa

from flowdeck.api.errors import EXCEPTION_HANDLERS
from flowdeck.settings import Settings
from flowdeck.storage.database import Database
from flowdeck.storage.disconnects import DatabaseUnavailableError


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def test_a_database_that_takes_no_connection_fails_after_the_setting_naming_it() -> None:
    db = Database(f"postgresql+asyncpg://postgres@127.0.0.1:{free_port()}/nothing", reconnect_seconds=0.5)
    started = time.monotonic()
    try:
        with pytest.raises(DatabaseUnavailableError, match="FLOWDECK_DB_RECONNECT_SECONDS") as raised:
            async with db.read() as conn:
                await conn.execute(sa.text("SELECT 1"))
    finally:
        await db.dispose()
    assert time.monotonic() - started >= 0.5  # it waited for PostgreSQL to come back
    response = EXCEPTION_HANDLERS[DatabaseUnavailableError](None, raised.value)  # type: ignore[arg-type,operator]
    assert response.status_code == 503 and response.headers["Retry-After"] == "5"
    assert "FLOWDECK_DB_RECONNECT_SECONDS (0.5 s)" in response.content["detail"]


def test_the_setting_is_read_and_checked() -> None:
    base = {"FLOWDECK_DATABASE_URL": "sqlite+aiosqlite:///x.db"}
    assert Settings.from_env(base).db_reconnect_seconds == 15.0
    assert Settings.from_env({**base, "FLOWDECK_DB_RECONNECT_SECONDS": "2.5"}).db_reconnect_seconds == 2.5
    with pytest.raises(ValueError, match="FLOWDECK_DB_RECONNECT_SECONDS"):
        Settings.from_env({**base, "FLOWDECK_DB_RECONNECT_SECONDS": "soon"})


def test_the_pool_sizes_are_read_and_checked() -> None:
    base = {"FLOWDECK_DATABASE_URL": "sqlite+aiosqlite:///x.db"}
    defaults = Settings.from_env(base)
    assert (defaults.db_pool_size, defaults.worker_db_pool_size) == (20, 4)
    assert Settings.from_env({**base, "FLOWDECK_WORKER_DB_POOL_SIZE": "8"}).worker_db_pool_size == 8
    with pytest.raises(ValueError, match="FLOWDECK_WORKER_DB_POOL_SIZE must be at least 1"):
        Settings.from_env({**base, "FLOWDECK_WORKER_DB_POOL_SIZE": "0"})
    with pytest.raises(ValueError, match="FLOWDECK_DB_POOL_SIZE must be an integer"):
        Settings.from_env({**base, "FLOWDECK_DB_POOL_SIZE": "many"})
