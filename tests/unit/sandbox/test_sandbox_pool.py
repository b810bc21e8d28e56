"""SandboxPool against real worker processes: results, errors, concurrency, the watchdog and replacement."""

from __future__ import annotations

import asyncio
import os
import signal
import time
from collections.abc import Mapping

import pytest

from flowdeck.domain.errors import NodeError
from flowdeck.sandbox.messages import (
    SandboxCompileError,
    SandboxCrashError,
    SandboxOutputError,
    SandboxRuntimeError,
    SandboxTimeoutError,
    SandboxUnavailableError,
)
from flowdeck.sandbox.pool import SandboxPool, SandboxResult

pytestmark = pytest.mark.asyncio(loop_scope="module")


async def run(pool: SandboxPool, code: str, ctx: Mapping[str, object] | None = None) -> SandboxResult:
    return await pool.run(code, ctx or {}, timeout_seconds=5)


async def wait_for_workers(pool: SandboxPool, count: int, *, within: float = 1.0) -> float:
    """Seconds until ``count`` workers are alive (fails after ``within``)."""
    started = time.monotonic()
    while len(pool.pids) < count:
        assert time.monotonic() - started < within, f"only {len(pool.pids)} workers after {within} s"
        await asyncio.sleep(0.01)
    return time.monotonic() - started


async def test_returns_a_dict_built_from_ctx(pool: SandboxPool) -> None:
    result = await run(pool, "return {'value': len(ctx['input']['items'])}", {"input": {"items": [1, 2, 3]}})
    assert result == SandboxResult(output={"value": 3}, logs="")


@pytest.mark.parametrize(
    ("code", "expected"),
    [
        ("import math\nreturn math.sqrt(16) + math.pi", 4 + 3.141592653589793),
        ("import json\nreturn json.loads(json.dumps({'a': [1, 2]}))", {"a": [1, 2]}),
        ("import re\nreturn re.findall(r'\\d+', 'a1b22c333')", ["1", "22", "333"]),
        ("import re\nreturn bool(re.match('abc', 'ABC', re.I))", True),
        ("import datetime\nd = datetime.date(2024, 2, 28) + datetime.timedelta(days=1)\nreturn d.isoformat()",
         "2024-02-29"),
        ("from datetime import datetime, timezone\nreturn datetime(2024, 1, 1, tzinfo=timezone.utc).isoformat()",
         "2024-01-01T00:00:00+00:00"),
        ("import collections\nreturn collections.Counter('abca').most_common(1)", [["a", 2]]),
        ("from collections import defaultdict\nd = defaultdict(list)\nd['k'].append(1)\nd['j'] = [2]\nreturn d",
         {"k": [1], "j": [2]}),
        ("import statistics\nreturn statistics.median([3, 1, 2])", 2),
        ("import itertools\nreturn list(itertools.islice(itertools.count(5), 3))", [5, 6, 7]),
        ("import decimal\nreturn str(decimal.Decimal('0.1') + decimal.Decimal('0.2'))", "0.3"),
        ("import random\nrandom.seed(7)\nx = random.randint(1, 6)\nreturn 1 <= x <= 6", True),
    ],
    ids=["math", "json", "re", "re-flag", "datetime", "from-import", "counter", "defaultdict", "statistics",
         "itertools", "decimal", "random"],
)  # fmt: skip
async def test_allowed_modules(pool: SandboxPool, code: str, expected: object) -> None:
    assert (await run(pool, code)).output == expected


async def test_ordinary_python_works(pool: SandboxPool) -> None:
    code = '''
def total(items, *, key):
    return sum(item[key] for item in items)

rows = ctx["rows"]
by_name = {row["name"]: row for row in rows}
a, (b, c) = 1, (2, 3)
count = 0
for index, row in enumerate(sorted(rows, key=lambda r: r["qty"])):
    count += index
args = [rows]
kwargs = {"key": "qty"}
try:
    1 / 0
except ZeroDivisionError as exc:
    caught = str(exc)
text = """first
  second"""
return {
    "total": total(*args, **kwargs), "names": sorted(by_name), "abc": [a, b, c], "count": count,
    "caught": caught, "text": text, "pair": (1, 2), "fstring": f"{count:03d}", "keys": {1: "one"},
}
'''
    output = (await run(pool, code, {"rows": [{"name": "b", "qty": 2}, {"name": "a", "qty": 1}]})).output
    assert output == {
        "total": 3, "names": ["a", "b"], "abc": [1, 2, 3], "count": 1, "caught": "division by zero",
        "text": "first\n  second", "pair": [1, 2], "fstring": "001", "keys": {"1": "one"},
    }  # fmt: skip


async def test_no_return_gives_none_and_ctx_changes_stay_inside(pool: SandboxPool) -> None:
    ctx = {"input": {"n": 1}}
    assert (await run(pool, "ctx['input']['n'] = 2", ctx)).output is None
    assert ctx == {"input": {"n": 1}}


async def test_print_is_captured_in_logs(pool: SandboxPool) -> None:
    result = await run(pool, "print('hello', 42)\nprint('a', 'b', sep='-', end='!')\nreturn printed")
    assert result.logs == "hello 42\na-b!"
    assert result.output == "hello 42\na-b!"


async def test_logs_are_capped() -> None:
    async with SandboxPool(1, max_log_chars=10) as small:
        result = await small.run("for i in range(100):\n    print(i)", {}, timeout_seconds=5)
    assert result.logs.startswith("0\n1\n2\n3\n4\n")
    assert "[logs truncated at 10 characters]" in result.logs


async def test_runtime_error_names_the_user_line(pool: SandboxPool) -> None:
    with pytest.raises(SandboxRuntimeError) as caught:
        await run(pool, "print('before')\nx = 1\ny = 0\nreturn x / y")
    error = caught.value
    assert str(error) == "ZeroDivisionError: division by zero (line 4)"
    assert (error.line, error.error_type, error.retryable, error.logs) == (4, "ZeroDivisionError", True, "before\n")
    assert isinstance(error, NodeError)


async def test_runtime_error_in_a_nested_function_names_its_line(pool: SandboxPool) -> None:
    with pytest.raises(SandboxRuntimeError, match=r"KeyError: 'missing' \(line 2\)"):
        await run(pool, "def get(d):\n    return d['missing']\n\nreturn get(ctx)")


async def test_compile_error_names_the_user_line_and_is_not_retried(pool: SandboxPool) -> None:
    with pytest.raises(SandboxCompileError) as caught:
        await run(pool, "x = 1\ny = (\nreturn x")
    assert "SyntaxError" in str(caught.value)
    assert caught.value.line == 2
    assert caught.value.retryable is False


@pytest.mark.parametrize(
    ("code", "fragment"),
    [
        ("return {'a': {1, 2}}", "output['a'] is a set, which is not JSON-serialisable; convert it to a sorted list"),
        ("import datetime\nreturn [datetime.date(2024, 1, 1)]", "output[0] is a date"),
        ("return {'x': float('nan')}", "output['x'] is nan"),
        ("return {(1, 2): 'tuple key'}", "output has a key of type tuple"),
        ("return (i for i in [1])", "output is a generator"),
        ("a = []\nfor i in range(200):\n    a = [a]\nreturn a", "nested more than 100 levels"),
        ("return 'x' * 17_000_000", "output is larger than 16 MiB"),
    ],
    ids=["set", "date", "nan", "tuple-key", "generator", "too-deep", "too-large"],
)
async def test_output_must_be_json(pool: SandboxPool, code: str, fragment: str) -> None:
    with pytest.raises(SandboxOutputError) as caught:
        await run(pool, code)
    assert fragment in str(caught.value)


async def test_large_context_and_output_travel_both_ways(pool: SandboxPool) -> None:
    result = await run(pool, "return {'n': len(ctx['blob']), 'echo': ctx['blob'] * 4}", {"blob": "y" * 1_000_000})
    assert result.output == {"n": 1_000_000, "echo": "y" * 4_000_000}


async def test_context_that_is_not_json_is_refused(pool: SandboxPool) -> None:
    with pytest.raises(NodeError, match="cannot be passed to the sandbox") as caught:
        await pool.run("return 1", {"x": object()}, timeout_seconds=5)
    assert caught.value.retryable is False


async def test_callers_beyond_the_pool_size_wait_their_turn(pool: SandboxPool) -> None:
    code = "total = 0\nfor i in range(20000):\n    total += i\nreturn total + ctx['n']"
    results = await asyncio.gather(*(pool.run(code, {"n": n}, timeout_seconds=5) for n in range(8)))
    assert [result.output for result in results] == [199990000 + n for n in range(8)]


async def test_event_loop_keeps_running_during_a_call(pool: SandboxPool) -> None:
    """Other tasks run while the sandbox works: a call that blocked the loop would finish before any tick."""
    busy = "n = 0\nwhile n < 1_000_000:\n    n += 1\nreturn n"
    call = asyncio.ensure_future(pool.run(busy, {}, timeout_seconds=10))
    ticks = 0
    while not call.done():
        await asyncio.sleep(0.001)
        ticks += 1
    assert (await call).output == 1_000_000
    assert ticks >= 3


async def test_a_stuck_worker_does_not_stop_the_others(pool: SandboxPool) -> None:
    stuck = asyncio.ensure_future(pool.run("while True:\n    pass", {}, timeout_seconds=1.5))
    await asyncio.sleep(0.05)
    started = time.monotonic()
    for n in range(5):
        assert (await run(pool, "return ctx['n']", {"n": n})).output == n
    assert time.monotonic() - started < 1.0
    assert not stuck.done()
    with pytest.raises(SandboxTimeoutError):
        await stuck


async def test_timed_out_worker_is_replaced_within_a_second(solo_pool: SandboxPool) -> None:
    (before,) = solo_pool.pids
    with pytest.raises(SandboxTimeoutError):
        await solo_pool.run("while True:\n    pass", {}, timeout_seconds=0.3)
    assert await wait_for_workers(solo_pool, 1) < 1.0
    assert solo_pool.pids != (before,)
    assert (await run(solo_pool, "return 'fresh'")).output == "fresh"


async def test_worker_killed_while_idle_is_replaced(solo_pool: SandboxPool) -> None:
    (victim,) = solo_pool.pids
    os.kill(victim, signal.SIGKILL)
    started = time.monotonic()
    while victim in solo_pool.pids:  # noticed through the pipe's EOF, without any call
        assert time.monotonic() - started < 1.0
        await asyncio.sleep(0.01)
    assert (await run(solo_pool, "return 1")).output == 1
    assert victim not in solo_pool.pids


async def test_worker_crashing_during_a_call_fails_that_call_clearly(solo_pool: SandboxPool) -> None:
    (victim,) = solo_pool.pids
    call = asyncio.ensure_future(solo_pool.run("while True:\n    pass", {}, timeout_seconds=5))
    await asyncio.sleep(0.1)
    os.kill(victim, signal.SIGSEGV)
    with pytest.raises(SandboxCrashError, match=r"crashed \(SIGSEGV\)") as caught:
        await call
    assert caught.value.retryable is True
    assert (await run(solo_pool, "return 'replaced'")).output == "replaced"


async def test_memory_error_replaces_the_worker(solo_pool: SandboxPool) -> None:
    (before,) = solo_pool.pids
    with pytest.raises(Exception, match="memory limit exceeded"):
        await solo_pool.run("x = [0] * 20_000_000\nreturn 1", {}, timeout_seconds=5, memory_mb=32)
    assert (await run(solo_pool, "return 1")).output == 1
    assert solo_pool.pids != (before,)


async def test_closing_fails_running_and_later_calls() -> None:
    pool = SandboxPool(1)
    await pool.start()
    call = asyncio.ensure_future(pool.run("while True:\n    pass", {}, timeout_seconds=5))
    waiting = asyncio.ensure_future(pool.run("return 1", {}, timeout_seconds=5))
    await asyncio.sleep(0.1)
    await pool.close()
    for pending in (call, waiting):
        with pytest.raises(SandboxUnavailableError):
            await pending
    with pytest.raises(SandboxUnavailableError):
        await pool.run("return 1", {}, timeout_seconds=5)
    assert pool.pids == ()
