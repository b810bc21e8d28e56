"""What the kernel counts for a process (``/proc``): its CPU seconds (alone, or with every process below it)
and how often it was preempted. The benchmarks read them for the processes they start (``bench_scale.py``,
``bench_http_server.py``) and for themselves (``bench_control.py``)."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

__all__ = ("cpu_seconds", "preemptions", "process_tree", "tree_cpu_seconds")

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


def process_tree(root: int) -> dict[int, list[str]]:
    """``/proc/<pid>/stat`` of ``root`` and its descendants, from field 3 (state) on."""
    stats: dict[int, list[str]] = {}
    children: dict[int, list[int]] = {}
    for entry in _PROC.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            text = (entry / "stat").read_text()
        except OSError:  # gone meanwhile
            continue
        fields = text[text.rindex(")") + 2 :].split()  # from field 3 (state) on: the name may hold spaces
        stats[int(entry.name)] = fields
        children.setdefault(int(fields[1]), []).append(int(entry.name))
    tree, todo = {}, [root]
    while todo:
        pid = todo.pop()
        if pid in stats:
            tree[pid] = stats[pid]
            todo += children.get(pid, [])
    return tree


def tree_cpu_seconds(root: int) -> float:
    """CPU seconds (user + system) of ``root`` and every process below it, those already reaped included."""
    # utime stime cutime cstime (fields 14-17): the c* fields hold children that ended and were reaped
    return sum(int(v) for fields in process_tree(root).values() for v in fields[11:15]) / _TICK
