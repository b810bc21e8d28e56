"""What the kernel counts for a process (``/proc``): its CPU seconds and how often it was preempted. The
benchmarks read them for the processes they start (``bench_scale.py``) and for themselves (``bench_control.py``)."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

__all__ = ("cpu_seconds", "preemptions")

_TICK = os.sysconf("SC_CLK_TCK")
_PROC = Path("/proc")


def cpu_seconds(pid: int) -> float:
    """user + system CPU seconds of a process so far (0 when it is gone)."""
    try:
        stat = (_PROC / str(pid) / "stat").read_text()
    except OSError:
        return 0.0
    fields = stat[stat.rindex(")") + 2 :].split()  # after "pid (comm) "; fields[0] is the state
    return (int(fields[11]) + int(fields[12])) / _TICK


def preemptions(pid: int) -> int:
    """How often a process was taken off its core while it could still run (involuntary context switches;
    0 when it is gone). Many per node mean more processes than cores: each then pays its caches again."""
    with contextlib.suppress(OSError):
        for line in (_PROC / str(pid) / "status").read_text().splitlines():
            if line.startswith("nonvoluntary_ctxt_switches:"):
                return int(line.split()[1])
    return 0
