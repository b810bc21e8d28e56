"""FLOWDECK_SQLITE_DIRS and FLOWDECK_HTTP_ALLOW reach the query engine of a running Flowdeck."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

import pytest

from flowdeck.runtime import open_runtime
from flowdeck.settings import Settings


def test_the_settings_are_read_from_the_environment() -> None:
    env = {
        "FLOWDECK_SQLITE_DIRS": f"/srv/a{os.pathsep} /srv/b {os.pathsep}",
        "FLOWDECK_HTTP_ALLOW": "crm.internal, 10.0.0.0/8,",
    }
    settings = Settings.from_env(env)
    assert (settings.sqlite_dirs, settings.http_allow) == (("/srv/a", "/srv/b"), ("crm.internal", "10.0.0.0/8"))
    assert (Settings.from_env({}).sqlite_dirs, Settings.from_env({}).http_allow) == (None, ())


async def test_a_running_flowdeck_applies_them(tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    with sqlite3.connect(data / "shop.db") as conn:
        conn.execute("CREATE TABLE t (x)")
    conn.close()
    own = tmp_path / "flowdeck.db"
    env = {"FLOWDECK_DATABASE_URL": f"sqlite+aiosqlite:///{own}",
           "FLOWDECK_SQLITE_DIRS": f"{data}{os.pathsep}{tmp_path}", "FLOWDECK_HTTP_ALLOW": "crm.internal"}  # fmt: skip
    async with open_runtime(Settings.from_env(env), with_worker=False) as runtime:
        engine = runtime.data.engine
        assert engine.check_source("sql", {"url": f"sqlite:///{data / 'shop.db'}"}) == []
        assert "Flowdeck's own database" in engine.check_source("sql", {"url": f"sqlite:///{own}"})[0].message
        assert engine.check_source("http", {"baseUrl": "http://crm.internal"}) == []
        assert engine.check_source("http", {"baseUrl": "http://10.1.2.3"})[0].path == "config.baseUrl"
    with pytest.raises(ValueError, match="FLOWDECK_HTTP_ALLOW"):
        async with open_runtime(Settings.from_env({**env, "FLOWDECK_HTTP_ALLOW": "not a host"}), with_worker=False):
            pass
