"""An interleaved A/B of the webhook round trips across git revisions: ``flowdeck bench --http``'s rows for
the chosen scenarios, each revision's ``serve`` started afresh every round on a database of its own (a
SQLite file by default, as ``bench --http`` makes one), rounds interleaved (A B A B …) so that a machine
whose load drifts drifts under both alike; the medians of req/s, p50 and serve's CPU per 1,000 calls.

    python tests/bench/ab_http.py 083aeb0 WORKTREE --rounds 5 --scenarios trivial
    python tests/bench/ab_http.py 083aeb0 WORKTREE --workers 1   # serve + one worker process
    python tests/bench/ab_http.py 0816df5 HEAD HEAD@1 --scenarios chain   # REV@N: N worker processes for that one

``WORKTREE`` and the worktrees under ``--root`` are as in tests/bench/ab_postgres.py.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path
from typing import Any

from ab_postgres import checkout, run  # the script beside this one (its folder is first on sys.path)

ONE_ROUND = """
import asyncio, json, sys
from flowdeck.bench_http import HttpPlan, Load, http_rows
from flowdeck.settings import Settings

seconds, scenarios, workers = int(sys.argv[1]), tuple(sys.argv[2].split(",")), sys.argv[3]
plan = HttpPlan(Load(20, seconds=seconds), Load(1, seconds=max(seconds // 2, 2)), Load(20, requests=300),
                scenarios=scenarios)
extra = () if workers == "-" else (int(workers),)  # revisions before 52d8319 take no worker count
rows = asyncio.run(http_rows(Settings.from_env(), plan, *extra))
print("AB-RESULT " + json.dumps(rows), flush=True)
"""

FIGURES = (("req/s", "reqPerSecond"), ("p50 ms", "msP50"), ("serve CPU s per 1,000", "serverCpuSPer1000"))


def table(revs: list[str], rounds: dict[str, list[list[dict[str, Any]]]]) -> str:
    """Medians over the rounds, a line per row of ``bench --http`` and figure (docs/benchmarks.md)."""
    first = rounds[revs[0]][0]
    lines = [f"| median of {len(rounds[revs[0]])} rounds | {' | '.join(revs)} |", "|---" * (len(revs) + 1) + "|"]
    for index, row in enumerate(first):
        for label, key in FIGURES:
            cells = []
            for rev in revs:
                values = [r[index][key] for r in rounds[rev] if r[index][key] is not None]
                cells.append(f"{statistics.median(values):.2f}" if values else "-")
            lines.append(f"| {row['workload']}, {row['connections']} conn: {label} | {' | '.join(cells)} |")
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(
        "revs", nargs="+", help="git revisions, or WORKTREE (this checkout as it stands); REV@N: N worker processes"
    )
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seconds", type=int, default=10, help="of the 20-connection load per round")
    parser.add_argument("--scenarios", default="trivial", help="comma-separated: trivial, chain, fanout")
    parser.add_argument("--workers", default="-", help="worker processes beside serve (default: serve's own)")
    parser.add_argument("--root", type=Path, default=Path("/tmp/flowdeck-ab"), help="where worktrees go")
    parser.add_argument("--json", type=Path, help="also write every round's rows here")
    args = parser.parse_args()
    args.root.mkdir(parents=True, exist_ok=True)
    workers = {rev: rev.partition("@")[2] or args.workers for rev in args.revs}
    sources = {rev: checkout(rev.partition("@")[0], args.root) for rev in args.revs}
    rounds: dict[str, list[list[dict[str, Any]]]] = {rev: [] for rev in args.revs}
    url = "sqlite+aiosqlite:///unused.db"  # bench --http makes a SQLite file of its own per round
    for n in range(args.rounds):
        for rev in args.revs:
            out = run(sources[rev], url, str(args.seconds), args.scenarios, workers[rev], code=ONE_ROUND)
            rows = json.loads(out.split("AB-RESULT ", 1)[1])
            rounds[rev].append(rows)
            brief = "; ".join(f"{r['workload']} {r['connections']}: {r['reqPerSecond']} req/s" for r in rows)
            print(f"round {n + 1} {rev}: {brief}", file=sys.stderr, flush=True)
    print(table(args.revs, rounds))
    if args.json:
        args.json.write_text(json.dumps(rounds, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
