"""Sandbox benchmark (a script, not a test): ``python tests/bench/bench_sandbox.py [--calls N]``.

Measures, on real worker processes:
- warm calls of a small python node through SandboxPool (median and p99 ms; targets 2 and 10 ms);
- kill -> replacement: after a watchdog kill, and after an external SIGKILL (target 1 s);
- the two ways of waiting for a worker without blocking the loop: ``loop.add_reader`` on the pipe
  (what the pool uses) against a thread-executor hop per call;
- compile time of the worst inputs the compiler's caps let through, or refuse (target well under 200 ms).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import signal
import socket
import statistics
import sys
import time
from collections.abc import Awaitable, Callable
from multiprocessing.connection import Connection

import msgspec

from flowdeck.sandbox.compiler import CodeCompileError, compile_code
from flowdeck.sandbox.messages import (
    RunRequest,
    RunSuccess,
    SandboxTimeoutError,
    WorkerSettings,
    decode_reply,
    encode,
)
from flowdeck.sandbox.pool import SandboxPool
from flowdeck.sandbox.worker import COMMAND

SMALL_NODE = "return {'sum': ctx['a'] + ctx['b']}"
SMALL_CTX = {"a": 1, "b": 2}


def summary(samples_ms: list[float]) -> str:
    ordered = sorted(samples_ms)
    p99 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]
    return f"median {statistics.median(ordered):6.3f} ms   p99 {p99:6.3f} ms   max {ordered[-1]:7.3f} ms"


async def warm_calls(calls: int) -> None:
    started = time.perf_counter()
    async with SandboxPool(2) as pool:
        print(f"pool of 2 ready in {(time.perf_counter() - started) * 1000:.0f} ms")
        for _ in range(50):
            await pool.run(SMALL_NODE, SMALL_CTX, timeout_seconds=5)
        samples = []
        for _ in range(calls):
            began = time.perf_counter()
            await pool.run(SMALL_NODE, SMALL_CTX, timeout_seconds=5)
            samples.append((time.perf_counter() - began) * 1000)
    print(f"{calls} warm calls, one at a time:      {summary(samples)}")


async def next_call_after(pool: SandboxPool, since: float) -> float:
    result = await pool.run(SMALL_NODE, SMALL_CTX, timeout_seconds=5)
    assert result.output == {"sum": 3}
    return (time.perf_counter() - since) * 1000


async def replacement(rounds: int) -> None:
    after_timeout, after_sigkill = [], []
    async with SandboxPool(1) as pool:
        for _ in range(rounds):
            with contextlib.suppress(SandboxTimeoutError):
                await pool.run("while True:\n    pass", {}, timeout_seconds=0.2)
            after_timeout.append(await next_call_after(pool, time.perf_counter()))
            (victim,) = pool.pids
            killed = time.perf_counter()
            os.kill(victim, signal.SIGKILL)
            while victim in pool.pids:
                await asyncio.sleep(0.001)
            after_sigkill.append(await next_call_after(pool, killed))
    print(f"watchdog kill -> next call done:    {summary(after_timeout)}   ({rounds} rounds)")
    print(f"external SIGKILL -> next call done: {summary(after_sigkill)}   ({rounds} rounds)")


async def transports(calls: int) -> None:
    """The same worker, the same messages; only the way the parent waits for the reply differs."""
    loop = asyncio.get_running_loop()
    parent_socket, child_socket = socket.socketpair()
    settings = msgspec.json.encode(WorkerSettings(max_output_bytes=1 << 20, max_log_chars=1 << 16)).decode()
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-P", "-c", COMMAND, str(child_socket.fileno()), settings, pass_fds=(child_socket.fileno(),)
    )
    child_socket.close()
    conn = Connection(parent_socket.detach())
    conn.recv_bytes()  # Ready
    payload = encode(RunRequest(SMALL_NODE, SMALL_CTX, 5.0, 256))

    async def via_add_reader() -> bytes:
        future: asyncio.Future[bytes] = loop.create_future()
        loop.add_reader(conn.fileno(), lambda: future.set_result(conn.recv_bytes()))
        try:
            conn.send_bytes(payload)
            return await future
        finally:
            loop.remove_reader(conn.fileno())

    async def via_executor() -> bytes:
        conn.send_bytes(payload)
        return await loop.run_in_executor(None, conn.recv_bytes)

    async def measure(call: Callable[[], Awaitable[bytes]]) -> list[float]:
        samples = []
        for _ in range(calls):
            began = time.perf_counter()
            assert isinstance(decode_reply(await call()), RunSuccess)
            samples.append((time.perf_counter() - began) * 1000)
        return samples

    await measure(via_executor)
    for name, call in (("loop.add_reader", via_add_reader), ("thread executor", via_executor)):
        print(f"transport {name:16}          {summary(await measure(call))}")
    conn.close()
    await process.wait()


def compile_worst_cases() -> None:
    real = "for row in ctx['rows']:\n    if row['a'] > ctx['limit']:\n        out.append(row['b'].strip())\n"
    cases = {
        "two longest f-strings allowed": ("x = f'" + "{1}" * 1360 + "'\n") * 2,
        "10,000 nodes of a.b": "x = [" + "a.b," * 2400 + "]",
        "10,000 nodes of a[0]": "x = [" + "a[0]," * 1900 + "]",
        "max-depth attribute chain": "x = a" + ".b" * 95,
        "9,900 statements": "x = 1\n" * 2490,
        "300 functions": "def f(a):\n    return a.b + 1\n" * 300,
        "ordinary code, near the caps": real * 180,
        "32 KiB of 1+1+... (refused)": "x = " + "1+" * 16380 + "1",
        "32 KiB of f() chains (refused)": "x = f" + "()" * 16380,
        "32 KiB of comparisons (refused)": "x = 1" + "<1" * 16380,
    }
    print("compile worst cases (best of 3):")
    for name, code in cases.items():
        best = float("inf")
        outcome = "compiles"
        for _ in range(3):
            began = time.perf_counter()
            try:
                compile_code(code)
            except CodeCompileError as exc:
                outcome = f"refused: {str(exc)[:60]}"
            best = min(best, (time.perf_counter() - began) * 1000)
        print(f"  {name:34} {len(code):6} chars {best:7.1f} ms  {outcome}")


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--calls", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=10)
    args = parser.parse_args()
    await warm_calls(args.calls)
    await replacement(args.rounds)
    await transports(args.calls)
    compile_worst_cases()


if __name__ == "__main__":
    asyncio.run(main())
