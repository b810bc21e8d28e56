# ruff: noqa: T201 -- a command's report, printed
"""``flowdeck bench --http``: webhook round trips against a real ``flowdeck serve`` (issue 15, the n8n comparison).

Each scenario is a saved workflow called as a client calls it: ``POST /hooks/{id}?wait=30`` with the
workflow's secret in ``X-Flowdeck-Secret``, the answer being the run's output once it finished. The
server is a ``flowdeck serve`` subprocess on a free port (its own temporary SQLite file, or the
configured PostgreSQL database), so what is measured includes HTTP, authentication, the engine, the
sandbox and the wait for the run's end. Per scenario, after a warm-up: 20 connections → requests per
second; 1 connection → p50/p99 latency; for both, the CPU seconds the server's process tree (uvicorn,
engine and sandbox workers) spent per 1,000 runs, read from ``/proc``.

The load comes from ``wrk`` when it is installed (a C client, so the generator is not what limits
the figure), else from a small asyncio HTTP/1.1 keep-alive client in this process; each row names its
generator and its CPU share. A request counts as an error unless it is answered 200 with the run
``COMPLETED`` and the output the workflow computes from the body.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import resource
import shutil
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from itertools import pairwise
from pathlib import Path
from typing import Any, Final

import httpx

from flowdeck.accounts.commands import create_token, create_user
from flowdeck.bench import _print_table, vacuum_hot_tables
from flowdeck.bench_http_server import BenchServer, serve_for_bench
from flowdeck.proc_stats import process_tree
from flowdeck.settings import Settings
from flowdeck.storage.database import Database

__all__ = ("SCENARIOS", "HttpPlan", "Load", "LoadResult", "Scenario", "http_rows", "run_http_bench")

BODY: Final = {"n": 7}
"""Every request's body: the workflows compute their output from ``n``."""
WAIT_SECONDS: Final = 30


@dataclass(frozen=True, slots=True)
class Load:
    """How one round calls a webhook: on ``connections`` keep-alive connections, for ``seconds`` or ``requests``."""

    connections: int
    seconds: int | None = None
    requests: int | None = None
    """A fixed count: only the built-in client can stop there (``wrk`` runs for a duration)."""


@dataclass(frozen=True, slots=True)
class HttpPlan:
    concurrent: Load
    single: Load
    warmup: Load
    """Always the built-in client, a fixed count: its results are not shown (its errors are, on stderr)."""
    generator: str = "auto"
    """``auto`` (``wrk`` if installed and the rounds are timed), ``wrk`` or ``python``."""
    scenarios: tuple[str, ...] = ("trivial", "chain", "fanout")

    @classmethod
    def standard(cls, *, quick: bool) -> HttpPlan:
        if quick:
            return cls(Load(20, seconds=2), Load(1, seconds=2), Load(20, requests=60))
        return cls(Load(20, seconds=10), Load(1, seconds=5), Load(20, requests=300))


@dataclass(frozen=True, slots=True)
class Scenario:
    name: str
    definition: dict[str, Any]
    output: dict[str, Any]
    """What every answer's ``output`` must be (for the body ``BODY``)."""
    n8n_per_second: float
    n8n_p50_ms: float
    n8n_cpu_per_1000: float


def _python(node_id: str, code: str, **extra: Any) -> dict[str, Any]:
    return {"id": node_id, "type": "python", "config": {"code": code}, **extra}


def _workflow(title: str, nodes: list[dict[str, Any]], pairs: list[tuple[str, str]], output: str) -> dict[str, Any]:
    """start → ``nodes`` wired by ``pairs`` → end, whose output is ``output`` (a template)."""
    python_ids = {n["id"] for n in nodes}
    edges = [
        {"id": f"e{i}", "source": a, "target": b, **({"sourceHandle": "success"} if a in python_ids else {})}
        for i, (a, b) in enumerate(pairs)
    ]
    start = {"id": "start", "type": "start", "config": {}}
    end = {"id": "end", "type": "end", "config": {"outputParameters": {"out": output}}}
    return {"title": f"bench http {title}", "nodes": [start, *nodes, end], "edges": edges}


def _trivial() -> Scenario:
    definition = _workflow("trivial", [], [("start", "end")], "{{ ctx.input.n }}")
    return Scenario("trivial (start -> end)", definition, {"out": 7}, 99.5, 10.7, 10.7)


def _chain() -> Scenario:
    steps = [_python("s1", "return {'n': ctx['input']['n'] + 1}")]
    steps += [_python(f"s{i}", f"return {{'n': ctx['s{i - 1}']['n'] + 1}}") for i in range(2, 11)]
    ids = ["start", *(s["id"] for s in steps), "end"]
    definition = _workflow("chain", steps, list(pairwise(ids)), "{{ ctx.s10.n }}")
    return Scenario("chain of 10 python", definition, {"out": 17}, 42.5, 36.3, 37.5)


def _fanout() -> Scenario:
    branches = [_python(f"b{i}", f"return {{'i': {i}}}") for i in range(10)]
    total = " + ".join(f"ctx['b{i}']['i']" for i in range(10))
    join = _python("join", f"return {{'sum': ctx['input']['n'] + {total}}}", joinMode="all")
    pairs = [("start", b["id"]) for b in branches] + [(b["id"], "join") for b in branches] + [("join", "end")]
    definition = _workflow("fanout", [*branches, join], pairs, "{{ ctx.join.sum }}")
    return Scenario("fan-out 10 -> join", definition, {"out": 52}, 41.5, 37.6, 38.5)


SCENARIOS: Final = {"trivial": _trivial, "chain": _chain, "fanout": _fanout}


@dataclass(slots=True)
class LoadResult:
    generator: str
    connections: int
    requests: int = 0
    errors: int = 0
    seconds: float = 0.0
    p50_ms: float | None = None
    p99_ms: float | None = None
    client_cpu: float = 0.0
    in_flight: int = 0
    """Requests sent but not awaited when the round's time was up (wrk leaves one per connection): their runs
    still finish on the server, so they count in its CPU per run."""
    samples: list[str] = field(default_factory=list)
    """The first few errors, as text."""

    def error(self, text: str) -> None:
        self.errors += 1
        if len(self.samples) < 3:
            self.samples.append(text[:300])


@dataclass(frozen=True, slots=True)
class _Hook:
    scenario: Scenario
    path: str
    secret: str


async def _create_hooks(settings: Settings, server: BenchServer, scenarios: list[Scenario]) -> list[_Hook]:
    """A user and token as ``flowdeck users create`` / ``tokens create`` make them; the workflows through the API."""
    email = f"bench-{os.urandom(4).hex()}@flowdeck.local"  # a PostgreSQL database may hold earlier benches' users
    await create_user(settings, email, "bench-http", os.urandom(16).hex())
    token = await create_token(settings, email, "bench --http")
    hooks = []
    headers = {"Authorization": f"Bearer {token}"}
    async with httpx.AsyncClient(base_url=server.url, headers=headers, timeout=30) as api:
        for scenario in scenarios:
            created = await api.post("/api/workflows", json=scenario.definition)
            created.raise_for_status()
            workflow_id = created.json()["id"]
            secret = await api.post(f"/api/workflows/{workflow_id}/webhook/secret")
            secret.raise_for_status()
            hooks.append(_Hook(scenario, f"/hooks/{workflow_id}?wait={WAIT_SECONDS}", secret.json()["secret"]))
    return hooks


# ---------------------------------------------------------------- the built-in client


def _check(result: LoadResult, status: int, body: bytes, expected: dict[str, Any]) -> None:
    if status != 200:
        result.error(f"HTTP {status}: {body.decode(errors='replace')}")
        return
    try:
        answer = json.loads(body)
    except ValueError:
        result.error(f"HTTP 200 but not JSON: {body[:200].decode(errors='replace')}")
        return
    if not isinstance(answer, dict):
        result.error(f"HTTP 200 but not an object: {answer!r}")
        return
    if answer.get("status") != "COMPLETED" or answer.get("output") != expected:
        result.error(f"run {answer.get('instanceId')} {answer.get('status')}: output {answer.get('output')!r}")


async def _read_response(reader: asyncio.StreamReader) -> tuple[int, bytes]:
    status_line = await reader.readline()
    if not status_line:
        raise ConnectionError("the server closed the connection")
    status, length = int(status_line.split()[1]), None
    while (line := await reader.readline()) not in (b"\r\n", b"\n", b""):
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value)
    if length is None:
        raise ConnectionError("an answer without Content-Length")
    return status, await reader.readexactly(length)


async def _python_round(url: str, hook: _Hook, load: Load) -> LoadResult:
    """``load`` with asyncio streams: one task per keep-alive connection, each sending as soon as it was answered."""
    host, port = url.removeprefix("http://").split(":")
    body = json.dumps(BODY).encode()
    request = (
        f"POST {hook.path} HTTP/1.1\r\nHost: {host}:{port}\r\nContent-Type: application/json\r\n"
        f"X-Flowdeck-Secret: {hook.secret}\r\nContent-Length: {len(body)}\r\n\r\n"
    ).encode() + body
    result, latencies = LoadResult("python asyncio", load.connections), []
    remaining = load.requests if load.requests is not None else sys.maxsize
    deadline = time.perf_counter() + (load.seconds if load.seconds is not None else 3600)

    async def connection() -> None:
        nonlocal remaining
        reader, writer = await asyncio.open_connection(host, int(port))
        try:
            while remaining > 0 and time.perf_counter() < deadline:
                remaining -= 1
                result.requests += 1
                sent = time.perf_counter()
                try:
                    async with asyncio.timeout(WAIT_SECONDS + 5):
                        writer.write(request)
                        status, answer = await _read_response(reader)
                except (OSError, TimeoutError, ValueError, asyncio.IncompleteReadError) as exc:
                    result.error(f"{type(exc).__name__}: {exc}")
                    writer.close()
                    reader, writer = await asyncio.open_connection(host, int(port))
                    continue
                latencies.append((time.perf_counter() - sent) * 1000)
                _check(result, status, answer, hook.scenario.output)
        finally:
            writer.close()

    cpu, started = time.process_time(), time.perf_counter()
    await asyncio.gather(*(connection() for _ in range(load.connections)))
    result.seconds, result.client_cpu = time.perf_counter() - started, time.process_time() - cpu
    latencies.sort()
    if latencies:
        result.p50_ms = latencies[len(latencies) // 2]
        result.p99_ms = latencies[min(len(latencies) - 1, int(len(latencies) * 0.99))]
    return result


# ---------------------------------------------------------------- wrk

_WRK_SCRIPT: Final = """
wrk.method = "POST"
wrk.body = [==[{body}]==]
wrk.headers["Content-Type"] = "application/json"
wrk.headers["X-Flowdeck-Secret"] = [==[{secret}]==]
local expected = [==[{expected}]==]
local threads = {{}}
function setup(thread) table.insert(threads, thread) end
function init(args) good = 0; bad = 0; sample = "" end
function response(status, headers, body)
  if status == 200 and body:find('"status":"COMPLETED"', 1, true) and body:find(expected, 1, true) then
    good = good + 1
  else
    bad = bad + 1
    if sample == "" then sample = "HTTP " .. status .. ": " .. body:sub(1, 200):gsub("%s", " ") end
  end
end
function done(summary, latency, requests)
  local good, bad, sample = 0, 0, ""
  for _, t in ipairs(threads) do
    good = good + t:get("good"); bad = bad + t:get("bad")
    if sample == "" then sample = t:get("sample") end
  end
  local e = summary.errors
  io.write(string.format("FLOWDECK %d %d %d %d %d %d %d %d %d %d %d\\n", summary.requests, summary.duration,
    good, bad, e.connect, e.read, e.write, e.timeout, latency:percentile(50), latency:percentile(99), e.status))
  io.write("FLOWDECK-SAMPLE " .. sample .. "\\n")
end
"""


def _wrk_script(hook: _Hook, workdir: Path) -> Path:
    expected = '"output":' + json.dumps(hook.scenario.output, separators=(",", ":"))
    script = _WRK_SCRIPT.format(body=json.dumps(BODY), secret=hook.secret, expected=expected)
    path = workdir / f"{hook.path.split('/')[2].split('?')[0]}.lua"
    path.write_text(script)
    return path


async def _wrk_round(url: str, hook: _Hook, load: Load, workdir: Path) -> LoadResult:
    """``load`` with ``wrk`` (one thread: a single core keeps up with thousands of requests a second)."""
    assert load.seconds is not None, "wrk runs for a duration"
    script = _wrk_script(hook, workdir)
    args = [
        "-t1",
        f"-c{load.connections}",
        f"-d{load.seconds}s",
        "--timeout",
        f"{WAIT_SECONDS + 5}s",
        "-s",
        str(script),
    ]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    wrk = await asyncio.create_subprocess_exec(
        "wrk", *args, url + hook.path, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE
    )
    out, err = await wrk.communicate()
    after = resource.getrusage(resource.RUSAGE_CHILDREN)  # wrk's own, now that it was waited for
    text = out.decode(errors="replace")
    found = re.search(r"^FLOWDECK ([\d ]+)$", text, re.MULTILINE)
    if wrk.returncode != 0 or found is None:
        raise RuntimeError(f"wrk failed ({wrk.returncode}): {err.decode(errors='replace')}\n{text}")
    requests, micros, good, bad, *socket_errors, p50, p99, _non_2xx = (int(v) for v in found.group(1).split())
    result = LoadResult("wrk", load.connections, requests=requests + sum(socket_errors), seconds=micros / 1e6)
    result.in_flight = load.connections
    result.errors = bad + sum(socket_errors)
    result.client_cpu = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
    result.p50_ms, result.p99_ms = p50 / 1000, p99 / 1000
    sample = re.search(r"^FLOWDECK-SAMPLE (.*)$", text, re.MULTILINE)
    if sample and sample.group(1):
        result.samples.append(sample.group(1))
    if sum(socket_errors):
        result.samples.append("wrk socket errors (connect, read, write, timeout): " + str(socket_errors))
    if good + bad != requests:
        result.samples.append(f"wrk counted {requests} answers but checked {good + bad}")
    return result


# ---------------------------------------------------------------- the rounds and the rows


def _generator(plan: HttpPlan) -> str:
    timed = plan.concurrent.seconds is not None and plan.single.seconds is not None
    if plan.generator == "wrk" or (plan.generator == "auto" and timed and shutil.which("wrk")):
        if not timed:
            raise ValueError("wrk runs for a duration: give the rounds seconds, not requests")
        if not shutil.which("wrk"):
            raise ValueError("wrk is not installed (apt-get install wrk), or use the built-in client")
        return "wrk"
    return "python"


async def _measure(server: BenchServer, hook: _Hook, load: Load, generator: str, workdir: Path) -> dict[str, Any]:
    counters = await server.database_counters()
    cpu = server.cpu_seconds()
    if generator == "wrk":
        result = await _wrk_round(server.url, hook, load, workdir)
    else:
        result = await _python_round(server.url, hook, load)
    await _settle(server)  # the requests left in flight finish before the next round and within this one's CPU
    server_cpu = server.cpu_seconds() - cpu
    after = await server.database_counters()
    for sample in result.samples:
        print(f"bench --http {hook.scenario.name}: error: {sample}", file=sys.stderr)
    moved = None if counters is None or after is None else {name: after[name] - counters[name] for name in after}
    return _row(hook.scenario, result, server_cpu, moved)


async def _settle(server: BenchServer, idle_share: float = 0.05, window: float = 0.3) -> None:
    """Wait until the server's processes use under ``idle_share`` of a core over ``window`` seconds (at most 40 s)."""
    deadline = time.monotonic() + 40
    before = server.cpu_seconds()
    while time.monotonic() < deadline:
        await asyncio.sleep(window)
        now = server.cpu_seconds()
        if now - before <= idle_share * window:
            return
        before = now
    print("bench --http: the server was still busy 40 s after the round", file=sys.stderr)


def _row(
    scenario: Scenario, result: LoadResult, server_cpu: float, counters: dict[str, float] | None
) -> dict[str, Any]:
    """``counters``: how the database counters of serve and its worker processes moved in the round
    (``None``: unknown)."""
    runs = max(result.requests + result.in_flight, 1)
    if result.connections == 1:
        n8n = f"p50 {scenario.n8n_p50_ms} ms, {scenario.n8n_cpu_per_1000} CPU s"
    else:
        n8n = f"{scenario.n8n_per_second} req/s, {scenario.n8n_cpu_per_1000} CPU s"
    return {
        "workload": f"http {scenario.name}",
        "generator": result.generator,
        "connections": result.connections,
        "requests": result.requests,
        "errors": result.errors,
        "reqPerSecond": round(result.requests / result.seconds, 1) if result.seconds else None,
        "msP50": None if result.p50_ms is None else round(result.p50_ms, 2),
        "msP99": None if result.p99_ms is None else round(result.p99_ms, 2),
        "serverCpuSPer1000": round(server_cpu * 1000 / runs, 2),
        # Under ~90 % at 20 connections: other processes took the server's core (a busy machine).
        "serverCpuPct": round(100 * server_cpu / result.seconds, 1) if result.seconds else None,
        "clientCpuSPer1000": round(result.client_cpu * 1000 / runs, 2),
        "clientCpuPct": round(100 * result.client_cpu / result.seconds, 1) if result.seconds else None,
        # the commits (on SQLite each an fsync) the calls shared, all processes together
        "commitsPerCall": None if counters is None else round(counters["flowdeck_db_commits_total"] / runs, 2),
        # SQLite: the share of the round the processes' writers spent waiting for another's write lock (summed:
        # past 100 % more than one waited at once); high, and more processes add nothing
        "writeLockWaitPct": _share(counters, "flowdeck_sqlite_write_lock_wait_seconds_total", result.seconds),
        "n8n": n8n,
    }


def _share(counters: dict[str, float] | None, name: str, seconds: float) -> float | None:
    if counters is None or name not in counters or not seconds:
        return None
    return round(100 * counters[name] / seconds, 1)


async def _vacuum(settings: Settings) -> None:
    """On PostgreSQL, the dead rows of the rounds before cleared (``vacuum_hot_tables``): every row of the table
    starts from the same state. A SQLite file is this bench's own, made afresh."""
    if settings.is_sqlite:
        return
    db = Database(settings.database_url, pool_size=1)
    try:
        await vacuum_hot_tables(db)
    finally:
        await db.dispose()


def _bench_settings(settings: Settings, workdir: Path) -> Settings:
    """The configured PostgreSQL database, else a fresh SQLite file of this bench's own."""
    if settings.is_sqlite:
        return replace(settings, database_url=f"sqlite+aiosqlite:///{workdir / 'bench-http.db'}")
    return settings


async def http_rows(settings: Settings, plan: HttpPlan, serve_workers: int | None = None) -> list[dict[str, Any]]:
    """Start a server (with ``serve_workers`` worker processes; None: serve's default), create the scenarios'
    workflows and webhooks, and measure each: two rows per scenario."""
    generator = _generator(plan)
    scenarios = [SCENARIOS[name]() for name in plan.scenarios]
    rows = []
    with tempfile.TemporaryDirectory(prefix="flowdeck-bench-http-") as tmp:
        workdir = Path(tmp)
        bench_settings = _bench_settings(settings, workdir)
        async with serve_for_bench(bench_settings, workdir, serve_workers) as server:
            processes = len(process_tree(server.process.pid))
            print(f"flowdeck serve at {server.url}: {processes} processes (with the sandbox workers)", file=sys.stderr)
            for hook in await _create_hooks(bench_settings, server, scenarios):
                warmup = await _python_round(server.url, hook, plan.warmup)
                for sample in warmup.samples:
                    print(f"bench --http {hook.scenario.name}: warm-up error: {sample}", file=sys.stderr)
                for load in (plan.concurrent, plan.single):
                    await _vacuum(bench_settings)
                    await _settle(server)
                    rows.append(await _measure(server, hook, load, generator, workdir))
                    if serve_workers is not None:
                        rows[-1]["workload"] += f" (serve + {serve_workers} worker processes)"
                    print(f"{rows[-1]['workload']:28} {load.connections:>2} conn: done", file=sys.stderr, flush=True)
    return rows


async def run_http_bench(
    settings: Settings, *, quick: bool = False, json_path: str | None = None, serve_workers: Sequence[int] = ()
) -> int:
    """``flowdeck bench --http``: print the rows as ``flowdeck bench`` does; 1 if any request failed. With
    ``serve_workers`` (``--http --workers 0,1``), the rows again for serve with each count of worker processes."""
    plan = HttpPlan.standard(quick=quick)
    rows = []
    for count in serve_workers or (None,):
        rows += await http_rows(settings, plan, count)
    _print_table(rows, settings.database_url)
    if json_path:
        report = json.dumps({"database": settings.database_url.split("://")[0], "results": rows}, indent=2)
        await asyncio.to_thread(Path(json_path).write_text, report)
        print(f"wrote {json_path}")
    return 1 if any(row["errors"] for row in rows) else 0
