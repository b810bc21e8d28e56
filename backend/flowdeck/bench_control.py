"""The machine's own price for running N Python processes at once, without Flowdeck: the control row of
``flowdeck bench --workers``.

N processes share a fixed amount of work, each 1/N of it, all at once: PostgreSQL round trips
(``SELECT $1``, asyncpg) with the same Python after each (a small document encoded and decoded, a dict
built from it), about what a worker does around a node. The work is the same at every N, so the summed
CPU beyond one process's is what the machine charges for sharing its cores and caches among N
interpreters and PostgreSQL's backends (a process taken off its core while it could run pays its caches
again when it comes back). The worker processes' growth beyond this control's is Flowdeck's own.

    python -m flowdeck.bench_control postgresql://user@host/db 5000   # one process's share (used by the bench)
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import sys
import time
from typing import Any

import msgspec
from sqlalchemy.engine import make_url

from flowdeck.proc_stats import preemptions

__all__ = ("control_round", "postgres_dsn")

_DOCUMENT = {f"field_{i}": {"value": i, "label": f"item {i}", "tags": ["a", "b", str(i)]} for i in range(12)}


def postgres_dsn(database_url: str) -> str:
    """``postgresql+asyncpg://...`` -> what asyncpg connects to."""
    return make_url(database_url).set(drivername="postgresql").render_as_string(hide_password=False)


async def _share(dsn: str, units: int) -> dict[str, Any]:
    """One process's share: connect, say ready, wait for the go on stdin, do ``units`` of the work."""
    import asyncpg  # type: ignore[import-untyped]

    connection = await asyncpg.connect(dsn)
    try:
        await connection.fetchval("SELECT $1::int", 0)  # the statement prepared before the clock starts
        sys.stdout.write("ready\n")
        sys.stdout.flush()
        await asyncio.get_running_loop().run_in_executor(None, sys.stdin.readline)
        cpu, preempted, done = time.process_time(), preemptions(os.getpid()), 0
        for unit in range(units):
            answer = await connection.fetchval("SELECT $1::int", unit)
            document = msgspec.json.decode(msgspec.json.encode({**_DOCUMENT, "unit": answer}))
            index = {key: value["value"] for key, value in document.items() if isinstance(value, dict)}
            done += document["unit"] == unit and len(index) == len(_DOCUMENT)
        cpu, preempted = time.process_time() - cpu, preemptions(os.getpid()) - preempted
        return {"units": done, "cpuSeconds": cpu, "preempted": preempted}
    finally:
        await connection.close()


async def control_round(database_url: str, processes: int, units: int) -> dict[str, Any]:
    """``units`` of the work shared by ``processes`` processes started at once: their summed CPU seconds and
    preemptions, and the wall time from the go to the last one's end. Every process is stopped (by its PID)
    before this returns, whatever happens."""
    if processes < 1 or units < processes:
        raise ValueError(f"the control needs at least one process and a unit each, got {processes} and {units}")
    dsn = postgres_dsn(database_url)
    shares = [units // processes + (1 if i < units % processes else 0) for i in range(processes)]
    children: list[asyncio.subprocess.Process] = []
    try:
        for share in shares:
            children.append(
                await asyncio.create_subprocess_exec(
                    sys.executable,
                    "-m",
                    "flowdeck.bench_control",
                    dsn,
                    str(share),
                    stdin=asyncio.subprocess.PIPE,
                    stdout=asyncio.subprocess.PIPE,
                )
            )
        for child in children:
            assert child.stdout is not None
            line = await asyncio.wait_for(child.stdout.readline(), 60)
            if line.strip() != b"ready":
                raise RuntimeError(f"a control process did not start: it said {line!r}")
        started = time.perf_counter()
        for child in children:
            assert child.stdin is not None
            child.stdin.write(b"go\n")
            await child.stdin.drain()
        outputs = await asyncio.gather(*(child.communicate() for child in children))
        wall = time.perf_counter() - started
    finally:
        for child in children:
            if child.returncode is None:
                with contextlib.suppress(ProcessLookupError):
                    child.kill()
                await child.wait()
    found = []
    for child, (stdout, _) in zip(children, outputs, strict=True):
        said = stdout.decode().strip().splitlines()
        if child.returncode != 0 or not said:
            raise RuntimeError(f"a control process failed (exit status {child.returncode})")
        found.append(json.loads(said[-1]))
    return {
        "processes": processes,
        "units": sum(one["units"] for one in found),
        "cpuSeconds": round(sum(one["cpuSeconds"] for one in found), 3),
        "preempted": sum(one["preempted"] for one in found),
        "wallSeconds": round(wall, 2),
    }


def main() -> int:
    dsn, units = sys.argv[1], int(sys.argv[2])
    sys.stdout.write(json.dumps(asyncio.run(_share(dsn, units))) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
