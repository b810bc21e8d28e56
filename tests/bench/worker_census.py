"""What N worker processes spend on one workload, process by process: CPU (user and system), context switches
(waits and preemptions) and, with ``--statements``, every statement PostgreSQL ran for it, by kind.

    FLOWDECK_DATABASE_URL=postgresql+asyncpg://postgres@127.0.0.1/scale python tests/bench/worker_census.py --workers 1
    python tests/bench/worker_census.py --workers 4 --workload chains
    python tests/bench/worker_census.py --workers 4 --runs 3   # the fan-out's warm-up run and three timed
    python tests/bench/worker_census.py --workers 2 --statements /var/log/postgresql/postgresql-15-main.log

The workload (``bench --workers``'s fan-out of 1,000, or 100 concurrent chains of 5) runs once to warm the
workers' caches, then once measured. This is how docs/benchmarks.md "Item 1 again" compared one worker
process with four: the same statements, not the same CPU. ``--statements`` needs a local server whose log
this user can read: it sets ``log_statement = 'all'`` on the benchmark's database for the measured run
(and resets it), and counts the log lines between two marker statements.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import os
import re
import sys
import time
from pathlib import Path

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import create_async_engine

from flowdeck.bench import chain, fan
from flowdeck.bench_scale import database_name, scale_bench
from flowdeck.settings import Settings

_TICK = os.sysconf("SC_CLK_TCK")
_MARK = "flowdeck-census"
_LOGGED = re.compile(r"LOG:  (?:execute [^:]*|statement): (.*)")


def _process(pid: int) -> dict[str, float]:
    stat = Path(f"/proc/{pid}/stat").read_text()
    fields = stat[stat.rindex(")") + 2 :].split()
    status = dict(line.split(":", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines() if ":" in line)
    return {
        "user": int(fields[11]) / _TICK,
        "system": int(fields[12]) / _TICK,
        "waits": int(status["voluntary_ctxt_switches"]),
        "preempted": int(status["nonvoluntary_ctxt_switches"]),
    }


def _statements(log: Path, start: int) -> collections.Counter[str]:
    """Statements logged after byte ``start`` between the two markers, by their first 100 characters."""
    with log.open(errors="replace") as f:
        f.seek(start)
        lines = f.read().splitlines()
    inside, kinds = False, collections.Counter[str]()
    for line in lines:
        if f"'{_MARK}-start'" in line:
            inside = True
        elif f"'{_MARK}-end'" in line:
            break
        elif inside and (found := _LOGGED.search(line)):
            kinds[re.sub(r"\s+", " ", found.group(1))[:100]] += 1
    return kinds


async def _say(settings: Settings, sql: str) -> None:
    engine = create_async_engine(settings.database_url)
    try:
        async with engine.connect() as conn:
            await conn.execute(sa.text(sql))
            await conn.commit()
    finally:
        await engine.dispose()


async def census(settings: Settings, workers: int, workload: str, log: Path | None, runs: int = 1) -> None:
    database = database_name(settings)
    if log:  # before the workers open their connections: a session takes it when it starts
        await _say(settings, f"ALTER DATABASE \"{database}\" SET log_statement = 'all'")
    try:
        async with scale_bench(settings, workers) as (bench, children):

            async def once() -> int:
                """Runs the workload; how many nodes ran."""
                if workload == "chains":
                    result = await bench.concurrent(chain(5), 100, "100 concurrent chains of 5", "", warm_rounds=0)
                    return int(result.row()["nodesPerRun"]) * 100
                result = await bench.sequential(fan(1000), runs, "fan-out 1,000")  # a warm-up run, then timed ones
                return int(result.row()["nodesPerRun"]) * (runs + 1)

            await once()  # the workers' caches warm
            start = log.stat().st_size if log else 0
            await _say(settings, f"SELECT '{_MARK}-start'")
            before = {pid: _process(pid) for pid in children.pids}
            began = time.perf_counter()
            nodes = await once()
            seconds = time.perf_counter() - began
            after = {pid: _process(pid) for pid in children.pids}
            await _say(settings, f"SELECT '{_MARK}-end'")
    finally:
        if log:
            await _say(settings, f'ALTER DATABASE "{database}" RESET log_statement')
    print(f"\n{workload}, {workers} worker process(es): {nodes} nodes in {seconds:.2f} s")
    print("worker      user s  system s     waits  preempted")
    totals = collections.Counter[str]()
    for pid in children.pids:
        used = {key: after[pid][key] - before[pid][key] for key in after[pid]}
        totals.update(used)
        print(f"{pid:<9} {used['user']:8.2f} {used['system']:9.2f} {used['waits']:9.0f} {used['preempted']:10.0f}")
    all_row = f"{totals['user']:8.2f} {totals['system']:9.2f} {totals['waits']:9.0f} {totals['preempted']:10.0f}"
    print(f"{'all':<9} {all_row}")
    print(f"CPU per node: {1000 * (totals['user'] + totals['system']) / nodes:.3f} ms")
    if log:
        kinds = _statements(log, start)
        print(f"\nstatements: {sum(kinds.values())}, {sum(kinds.values()) / nodes:.2f} per node")
        for text, count in kinds.most_common(20):
            print(f"{count:7d} {count / nodes:6.3f}  {text}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workers", type=int, default=1, help="worker processes (0: this process's own worker)")
    parser.add_argument("--workload", choices=("fanout", "chains"), default="fanout")
    parser.add_argument("--statements", type=Path, help="PostgreSQL's log file: count the statements too")
    parser.add_argument("--runs", type=int, default=1, help="timed runs of the fan-out after its warm-up run")
    args = parser.parse_args()
    settings = Settings.from_env()
    if settings.is_sqlite:
        print("worker_census.py needs PostgreSQL (FLOWDECK_DATABASE_URL=postgresql+asyncpg://...)", file=sys.stderr)
        return 2
    asyncio.run(census(settings, args.workers, args.workload, args.statements, args.runs))
    return 0


if __name__ == "__main__":
    sys.exit(main())
