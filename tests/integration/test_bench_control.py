"""The control row of ``bench --workers`` (flowdeck/bench_control.py): N processes without Flowdeck share a
fixed amount of PostgreSQL round trips and Python, so their summed CPU beside one process's is the
machine's own price for N processes."""

from __future__ import annotations

import os

import pytest

from flowdeck.bench_control import control_round, postgres_dsn
from flowdeck.bench_scale import _control_cell

pytestmark = pytest.mark.slow


def _children() -> set[int]:
    found = set()
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as stat:
                    if int(stat.read().rsplit(")", 1)[1].split()[1]) == os.getpid():
                        found.add(int(entry))
            except (OSError, IndexError, ValueError):
                continue
    return found


async def test_the_processes_share_the_work_and_are_all_gone_after(postgres_url: str) -> None:
    before = _children()
    alone = await control_round(postgres_url, 1, 600)
    shared = await control_round(postgres_url, 3, 601)  # not a multiple: one process takes a unit more
    assert alone["processes"] == 1 and alone["units"] == 600
    assert shared["processes"] == 3 and shared["units"] == 601
    assert alone["cpuSeconds"] > 0 and shared["cpuSeconds"] > 0
    assert alone["preempted"] >= 0 and shared["wallSeconds"] > 0
    assert _children() <= before  # every control process was waited for


async def test_a_control_process_that_cannot_connect_fails_the_round_and_leaves_nothing() -> None:
    before = _children()
    with pytest.raises(RuntimeError, match="did not start"):
        await control_round("postgresql+asyncpg://nobody@127.0.0.1:1/none", 2, 10)
    assert _children() <= before


async def test_a_round_needs_a_process_and_a_unit_for_each() -> None:
    with pytest.raises(ValueError, match="at least one process"):
        await control_round("postgresql+asyncpg://x@127.0.0.1/db", 0, 10)
    with pytest.raises(ValueError, match="a unit each"):
        await control_round("postgresql+asyncpg://x@127.0.0.1/db", 4, 3)


def test_the_table_shows_each_count_as_a_multiple_of_the_first() -> None:
    first = {"cpuSeconds": 1.25}
    assert _control_cell(first, first) == "1.25 (1.00x)"
    assert _control_cell({"cpuSeconds": 1.5}, first) == "1.5 (1.20x)"
    assert postgres_dsn("postgresql+asyncpg://u:p@h:5433/d") == "postgresql://u:p@h:5433/d"
