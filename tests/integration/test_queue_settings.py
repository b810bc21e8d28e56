"""FLOWDECK_LEASE_SECONDS and FLOWDECK_TENANT_CONCURRENCY: read from the environment, applied to the
worker that serve and worker run alike (both open the runtime)."""

from __future__ import annotations

from pathlib import Path

import pytest

from flowdeck.runtime import open_runtime
from flowdeck.settings import Settings


def test_the_queue_settings_are_read_from_the_environment() -> None:
    settings = Settings.from_env({"FLOWDECK_LEASE_SECONDS": "12.5", "FLOWDECK_TENANT_CONCURRENCY": "3"})
    assert (settings.lease_seconds, settings.tenant_concurrency) == (12.5, 3)
    defaults = Settings.from_env({})
    assert (defaults.lease_seconds, defaults.tenant_concurrency) == (30.0, None)
    with pytest.raises(ValueError, match="FLOWDECK_LEASE_SECONDS"):
        Settings.from_env({"FLOWDECK_LEASE_SECONDS": "soon"})
    with pytest.raises(ValueError, match="FLOWDECK_TENANT_CONCURRENCY must be at least 1"):
        Settings.from_env({"FLOWDECK_TENANT_CONCURRENCY": "0"})


async def test_a_running_flowdeck_leases_and_shares_as_configured(tmp_path: Path) -> None:
    env = {
        "FLOWDECK_DATABASE_URL": f"sqlite+aiosqlite:///{tmp_path / 'flowdeck.db'}",
        "FLOWDECK_LEASE_SECONDS": "7",
        "FLOWDECK_TENANT_CONCURRENCY": "2",
        "FLOWDECK_WORKER_CONCURRENCY": "6",
    }
    async with open_runtime(Settings.from_env(env), with_scheduler=False) as runtime:
        worker = runtime.engine.worker
        assert (worker.lease_seconds, worker.tenant_concurrency, worker.concurrency) == (7.0, 2, 6)
        assert runtime.engine.orchestrator.lease_seconds == 7.0
