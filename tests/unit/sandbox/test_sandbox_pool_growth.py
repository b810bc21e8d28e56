"""The pool with real processes: it grows by a process for a tenant held out by another's calls,
keeps that process out of the busy tenant's hands, and shrinks back to its floor when idle."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

import pytest

from flowdeck.sandbox.pool import SandboxPool
from flowdeck.settings import Settings

SPIN = (
    "import datetime\n"
    "end = datetime.datetime.now() + datetime.timedelta(seconds=3)\n"
    "while datetime.datetime.now() < end:\n"
    "    pass\n"
    "return {'spun': True}"
)


async def _wait_until(condition: Callable[[], bool], timeout: float = 15) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "the pool did not get there in time"
        await asyncio.sleep(0.02)


async def test_a_tenant_held_out_gets_a_process_of_its_own_which_stops_when_idle() -> None:
    async with SandboxPool(2, max_size=3, idle_seconds=0.3) as pool:
        assert len(pool.pids) == 2
        busy = [asyncio.create_task(pool.run(SPIN, {}, timeout_seconds=30, tenant="busy")) for _ in range(3)]
        await _wait_until(lambda: pool.usage[0] == 2 and pool.waiting == 1)

        result = await pool.run("return {'v': 42}", {}, timeout_seconds=10, tenant="quiet")
        assert result.output == {"v": 42}
        assert not any(task.done() for task in busy)  # it did not wait for the busy tenant's calls
        assert len(pool.pids) == 3
        # The grown process is idle now, but the busy tenant already holds its share: its third call waits.
        assert pool.usage == (2, 1)
        assert pool.waiting == 1

        # A call that gives up while waiting leaves its line.
        gives_up = asyncio.create_task(pool.run(SPIN, {}, timeout_seconds=30, tenant="busy"))
        await _wait_until(lambda: pool.waiting == 2)
        gives_up.cancel()
        await _wait_until(lambda: pool.waiting == 1)

        assert [r.output for r in await asyncio.gather(*busy)] == [{"spun": True}] * 3
        await _wait_until(lambda: len(pool.pids) == 2)  # back to the floor after 0.3 s idle
        assert pool.usage == (0, 2)
        assert (await pool.run("return 1", {}, timeout_seconds=10, tenant="quiet")).output == 1


async def test_the_ceiling_defaults_to_the_floor_plus_four() -> None:
    pool = SandboxPool(3)
    assert (pool.size, pool.max_size) == (3, 7)


def test_the_sandbox_settings_are_read_and_a_ceiling_below_the_floor_is_refused() -> None:
    settings = Settings.from_env({"FLOWDECK_SANDBOX_MAX_WORKERS": "5", "FLOWDECK_SANDBOX_IDLE_SECONDS": "2.5"})
    assert (settings.sandbox_workers, settings.sandbox_max_workers, settings.sandbox_idle_seconds) == (2, 5, 2.5)
    assert Settings.from_env({}).sandbox_max_workers is None  # the pool's default: the floor + 4
    with pytest.raises(ValueError, match=r"MAX_WORKERS \(3\) must be at least FLOWDECK_SANDBOX_WORKERS"):
        Settings.from_env({"FLOWDECK_SANDBOX_WORKERS": "4", "FLOWDECK_SANDBOX_MAX_WORKERS": "3"})
    with pytest.raises(ValueError, match="FLOWDECK_SANDBOX_IDLE_SECONDS"):
        Settings.from_env({"FLOWDECK_SANDBOX_IDLE_SECONDS": "0"})
