"""An interleaved A/B of the PostgreSQL engine across git revisions: ``flowdeck bench``'s rows 1 (chain of
20, ms per node) and 3 (100 concurrent chains of 5, runs/s), each revision in a process of its own, on a
database of its own, rounds interleaved (A B C A B C …) so that a machine whose load drifts drifts
under all of them alike; the medians, and the CPU each node cost the engine's process and PostgreSQL.

    python tests/bench/ab_postgres.py fd254e3 main WORKTREE --rounds 3
    python tests/bench/ab_postgres.py 7d5739b WORKTREE --sqlite   # the same on SQLite files (no server CPU)

``WORKTREE`` is this checkout as it stands (uncommitted changes included); other names are checked out
into throwaway git worktrees under ``--root``. The databases are made and dropped by the script
(``FLOWDECK_AB_ADMIN_URL``, default the local server's ``postgres`` database, needs CREATE DATABASE).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import uuid
from pathlib import Path
from typing import Any

import asyncpg

REPO = Path(__file__).resolve().parents[2]
ADMIN_URL = os.environ.get("FLOWDECK_AB_ADMIN_URL", "postgresql://postgres@127.0.0.1:5432/postgres")

ONE_ROUND = """
import asyncio, json, os, sys, time
from flowdeck.bench import NoopHandler, _Bench, chain
from flowdeck.runtime import open_runtime
from flowdeck.settings import Settings

async def backends(db):
    # CPU seconds so far of each PostgreSQL backend serving this database (they run on this machine)
    from sqlalchemy import text
    if db.is_sqlite:
        return {}
    async with db.read(snapshot=False) as conn:
        pids = [r[0] for r in await conn.execute(text(
            "SELECT pid FROM pg_stat_activity WHERE datname = current_database()"))]
    ticks = {}
    for pid in pids:
        try:
            fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
        except FileNotFoundError:
            continue
        ticks[pid] = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return ticks

async def concurrent(bench, warm_only=False):
    workflow = await bench.engine.create_workflow(bench.tenant_id, chain(5))
    for _ in range(2):
        await asyncio.gather(*(bench.timed_run(workflow.id) for _ in range(100)))
    if warm_only:
        return None

    async def body(progress):
        async def one():
            ms = await bench.timed_run(workflow.id)
            progress.step()
            return ms
        return list(await asyncio.gather(*(one() for _ in range(100))))

    return await bench.measure("100 concurrent chains of 5", 5, 100, body)

async def main(chain_runs):
    settings = Settings.from_env()
    async with open_runtime(settings, migrate=False, extra_handlers=[NoopHandler()], with_scheduler=False) as rt:
        bench = _Bench(rt.engine, await rt.engine.tenants.ensure("ab"))
        rt.engine.worker.tenant_concurrency = rt.engine.worker.concurrency
        found = {}
        try:
            # Every revision runs the same work (the bench's own warm-ups differ between revisions, and on a
            # server without autovacuum each run leaves dead rows that slow later rounds): the concurrent
            # workload warms twice, unmeasured, then runs measured; the chain warms with one run. CPU per node
            # counts every run of a workload, its warm-up included.
            await concurrent(bench, warm_only=True)
            for name, work, nodes in (
                ("chain", lambda: bench.sequential(chain(20), chain_runs, "chain of 20"), (chain_runs + 1) * 20),
                ("concurrent", lambda: concurrent(bench), 300 * 5),
            ):
                cpu, before = time.process_time(), await backends(rt.engine.db)
                row = (await work()).row()
                cpu, after = time.process_time() - cpu, await backends(rt.engine.db)
                pg = sum(seconds - before.get(pid, 0.0) for pid, seconds in after.items())  # new ones: all theirs
                found[name] = {
                    "msPerNode": row["msPerNode"], "runsPerSecond": row["runsPerSecond"],
                    "roundTripsPerNode": row["roundTripsPerNode"],
                    "engineCpuMsPerNode": round(cpu * 1000 / nodes, 3),
                    "postgresCpuMsPerNode": round(pg * 1000 / nodes, 3),
                }
        finally:
            await bench.close()
    print("AB-RESULT " + json.dumps(found), flush=True)

asyncio.run(main(int(sys.argv[1])))
"""
"""One round of one revision (CPU per node over every run of a workload, its warm-up runs included, all
on warm connections; the backends of connections opened during a workload count whole)."""


def checkout(rev: str, root: Path) -> Path:
    if rev == "WORKTREE":
        return REPO
    parse = ["git", "-C", str(REPO), "rev-parse", "--verify", f"{rev}^{{commit}}"]
    commit = subprocess.run(parse, capture_output=True, text=True, check=True).stdout.strip()
    path = root / commit  # by commit: a branch name that moved on gets a checkout of its own
    if not path.exists():
        subprocess.run(["git", "-C", str(REPO), "worktree", "add", "--detach", str(path), commit], check=True)
    return path


async def admin(sql: str) -> None:
    conn = await asyncpg.connect(ADMIN_URL)
    try:
        await conn.execute(sql)
    finally:
        await conn.close()


async def autovacuum_off() -> bool:
    conn = await asyncpg.connect(ADMIN_URL)
    try:
        return bool(await conn.fetchval("SHOW autovacuum") == "off")
    finally:
        await conn.close()


async def vacuum(name: str) -> None:
    """What autovacuum would do about once a round (a round of three revisions takes about its naptime, a
    minute): without it the queue table bloats with every round, and a revision whose reads scan it (the
    claim's read of which tenants wait) slows with the rounds, which says nothing about a real server."""
    conn = await asyncpg.connect(ADMIN_URL.rsplit("/", 1)[0] + f"/{name}")
    try:
        await conn.execute("VACUUM (ANALYZE)")
    finally:
        await conn.close()


def database_url(name: str, sqlite_dir: Path | None = None) -> str:
    if sqlite_dir is not None:
        return f"sqlite+aiosqlite:///{sqlite_dir / name}.db"
    base = ADMIN_URL.rsplit("/", 1)[0].replace("postgresql://", "postgresql+asyncpg://")
    return f"{base}/{name}"


def run(source: Path, url: str, *args: str, code: str | None = None) -> str:
    env = {**os.environ, "PYTHONPATH": str(source / "backend"), "FLOWDECK_DATABASE_URL": url}
    command = [sys.executable, "-c", code, *args] if code else [sys.executable, "-m", "flowdeck", *args]
    done = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
    if done.returncode:
        raise RuntimeError(f"{source}: {' '.join(args) or 'round'} failed:\n{done.stderr[-3000:]}")
    return done.stdout


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("revs", nargs="+", help="git revisions, or WORKTREE for this checkout as it stands")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--chain-runs", type=int, default=50, help="runs of the chain of 20 per round")
    parser.add_argument("--root", type=Path, default=Path("/tmp/flowdeck-ab"), help="where worktrees go")
    parser.add_argument("--json", type=Path, help="also write every round's figures here")
    parser.add_argument("--sqlite", action="store_true", help="SQLite files (in a temporary directory) instead")
    args = parser.parse_args()
    sqlite_dir = Path(tempfile.mkdtemp(prefix="flowdeck-ab-")) if args.sqlite else None
    args.root.mkdir(parents=True, exist_ok=True)
    sources = {rev: checkout(rev, args.root) for rev in args.revs}
    names = {rev: f"flowdeck_ab_{uuid.uuid4().hex[:8]}" for rev in args.revs}
    rounds: dict[str, list[dict[str, Any]]] = {rev: [] for rev in args.revs}
    try:
        for rev in args.revs:
            if sqlite_dir is None:
                asyncio.run(admin(f'CREATE DATABASE "{names[rev]}"'))
            run(sources[rev], database_url(names[rev], sqlite_dir), "migrate")
        stand_in = sqlite_dir is None and asyncio.run(autovacuum_off())
        if stand_in:
            print("autovacuum is off here: each database is vacuumed after each of its rounds", file=sys.stderr)
        for n in range(args.rounds):
            for rev in args.revs:
                out = run(sources[rev], database_url(names[rev], sqlite_dir), str(args.chain_runs), code=ONE_ROUND)
                found = json.loads(out.split("AB-RESULT ", 1)[1])
                rounds[rev].append(found)
                print(f"round {n + 1} {rev}: {json.dumps(found)}", file=sys.stderr, flush=True)
                if stand_in:
                    asyncio.run(vacuum(names[rev]))
    finally:
        for rev in args.revs:
            if sqlite_dir is None:
                asyncio.run(admin(f'DROP DATABASE IF EXISTS "{names[rev]}" WITH (FORCE)'))
        if sqlite_dir is not None:
            shutil.rmtree(sqlite_dir, ignore_errors=True)
    print(table(args.revs, rounds))
    if args.json:
        args.json.write_text(json.dumps(rounds, indent=2))
    return 0


ROWS = (
    ("chain of 20: ms per node", "chain", "msPerNode"),
    ("chain of 20: round trips per node", "chain", "roundTripsPerNode"),
    ("chain of 20: engine / PostgreSQL CPU ms per node", "chain", ("engineCpuMsPerNode", "postgresCpuMsPerNode")),
    ("100 concurrent: runs/s", "concurrent", "runsPerSecond"),
    ("100 concurrent: round trips per node", "concurrent", "roundTripsPerNode"),
    (
        "100 concurrent: engine / PostgreSQL CPU ms per node",
        "concurrent",
        ("engineCpuMsPerNode", "postgresCpuMsPerNode"),
    ),
)


def table(revs: list[str], rounds: dict[str, list[dict[str, Any]]]) -> str:
    """Medians over the rounds, as a Markdown table (docs/benchmarks.md)."""

    def median(rev: str, workload: str, key: str) -> str:
        values = [r[workload][key] for r in rounds[rev] if r[workload][key] is not None]
        return f"{statistics.median(values):.2f}" if values else "-"

    lines = [f"| median of {len(rounds[revs[0]])} rounds | {' | '.join(revs)} |", "|---" * (len(revs) + 1) + "|"]
    for label, workload, key in ROWS:
        cells = [
            " / ".join(median(rev, workload, k) for k in key) if isinstance(key, tuple) else median(rev, workload, key)
            for rev in revs
        ]
        lines.append(f"| {label} | {' | '.join(cells)} |")
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
