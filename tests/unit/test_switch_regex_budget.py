"""A switch case's regular expression is matched within a CPU-time budget: a process that is stopped (the
chaos suite's SIGSTOP) or starved of a core does not fail a search that did not run long."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from flowdeck.domain.errors import NodeError
from flowdeck.handlers.switch_regex import REGEX_BUDGET_SECONDS, search_within_budget

SEARCH_IN_A_CHILD = """
import re, time
from flowdeck.handlers.switch_regex import REGEX_BUDGET_SECONDS, search_within_budget

def cpu_seconds(n):
    started = time.process_time()
    re.search("x+x+y", "x" * n)
    return time.process_time() - started

# The backtracking grows as the cube of the x's (every start, every split of the two x+): as many as take
# 30 % of the budget here and now (a loaded machine makes each step dearer), measured on a search long
# enough to time, so the search needs the budget's CPU time it has and no more.
size = 100
while (sample := sorted(cpu_seconds(size) for _ in range(3))[1]) < 0.02:
    size *= 2
size = int(size * (0.3 * REGEX_BUDGET_SECONDS / sample) ** (1 / 3))
print("searching", flush=True)
try:
    print(search_within_budget("x+x+y", "x" * size, "config.cases[0].matches"), flush=True)
except Exception as exc:
    print(f"{type(exc).__name__}: {exc}", flush=True)
"""
"""``x+x+y`` on as many x's as backtrack for 30 % of the budget's CPU time, measured in the child."""


def _cpu_ticks(pid: int) -> int:
    """The process's user and system CPU time so far, in clock ticks (``/proc/PID/stat``)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])


def test_a_search_past_the_budget_fails_naming_the_path() -> None:
    with pytest.raises(NodeError, match=r"config\.cases\[0\]\.matches: .* more than 0\.25 s of CPU time"):
        search_within_budget("x+x+y", "x" * 3000, "config.cases[0].matches")


def test_time_the_process_spends_stopped_does_not_count() -> None:
    child = subprocess.Popen(
        [sys.executable, "-c", SEARCH_IN_A_CHILD], stdout=subprocess.PIPE, text=True, env=os.environ.copy()
    )
    try:
        assert child.stdout is not None
        assert child.stdout.readline().strip() == "searching"
        started = _cpu_ticks(child.pid)
        while _cpu_ticks(child.pid) < started + 3:  # 30 ms into the search: its budget is counting
            time.sleep(0.001)
        os.kill(child.pid, signal.SIGSTOP)
        time.sleep(REGEX_BUDGET_SECONDS * 3)  # three budgets of wall clock pass while it is stopped
        os.kill(child.pid, signal.SIGCONT)
        answer, _ = child.communicate(timeout=60)
    finally:
        child.kill()
        child.wait()
    assert answer.strip() == "False"
