"""Escape attempts and resource attacks against real sandbox workers: each is refused or stopped."""

from __future__ import annotations

import time

import pytest

from flowdeck.sandbox.messages import (
    SandboxCompileError,
    SandboxError,
    SandboxMemoryError,
    SandboxRuntimeError,
    SandboxTimeoutError,
    SandboxViolationError,
)
from flowdeck.sandbox.pool import SandboxPool

pytestmark = pytest.mark.asyncio(loop_scope="module")

C, V, R = SandboxCompileError, SandboxViolationError, SandboxRuntimeError

# (id, code, expected error, fragment of its message). Every body tries to *return* the prize, so a
# success would be an escape.
ESCAPES: list[tuple[str, str, type[SandboxError], str]] = [
    # Frame walking through generators, coroutines and tracebacks.
    ("genexp-gi_frame", "g = (i for i in [1])\nreturn g.gi_frame.f_back.f_globals", C, "gi_frame"),
    ("generator-gi_frame", "def gen():\n    yield 1\nreturn gen().gi_frame.f_globals", C, "gi_frame"),
    ("generator-gi_code", "return (i for i in []).gi_code", C, "gi_code"),
    ("frame-f_back", "def f():\n    yield 1\nx = f()\nreturn x.f_back", C, "f_back"),
    ("frame-f_globals", "return ctx.f_globals", C, "f_globals"),
    ("frame-f_builtins", "return ctx.f_builtins", C, "f_builtins"),
    ("coroutine-cr_frame", "async def f():\n    pass\nreturn f().cr_frame", C, "AsyncFunctionDef"),
    ("await", "async def f():\n    await g()\nreturn 1", C, "not allowed"),
    ("async-generator-ag_frame", "async def f():\n    yield 1\nreturn f().ag_frame", C, "not allowed"),
    ("traceback-attribute", "try:\n    1 / 0\nexcept Exception as e:\n    return e.__traceback__", C, "__traceback__"),
    ("attributeerror-obj", "try:\n    ctx.missing\nexcept AttributeError as e:\n    return e.obj", V, ".obj"),
    ("traceback-tb_frame", "return ctx.tb_frame.f_globals", C, "tb_frame"),
    ("traceback-tb_next", "return ctx.tb_next", C, "tb_next"),
    ("sys-exc_info", "import sys\ntry:\n    1 / 0\nexcept Exception:\n    return sys.exc_info()", V, "'sys'"),
    ("exc_info-tb_frame", "try:\n    1 / 0\nexcept Exception:\n    return sys.exc_info()[2].tb_frame", C, "tb_frame"),
    # str.format / format_map / string.Formatter reach attributes through the format mini-language.
    ("str-format", "return '{0.__class__.__mro__}'.format(1)", V, "str.format"),
    ("str-format_map", "return '{x.__class__}'.format_map({'x': 1})", V, "str.format_map"),
    ("str-format-unbound", "f = str.format\nreturn f('{0.__class__}', 1)", V, "str.format"),
    ("str-format-subclass-ctor", "s = str('{0.__init__.__globals__}')\nreturn s.format(ctx)", V, "str.format"),
    ("string-module", "import string\nreturn string.Formatter().format('{0.__class__}', 1)", V, "'string'"),
    ("string-builtin", "return string.Formatter().vformat('{0.__class__}', [1], {})", R, "NameError"),
    ("format-builtin", "return format(ctx, '{0.__class__}')", V, "format()"),
    ("fstring-dunder", "return f'{ctx.__class__}'", C, "__class__"),
    # Walks through dunder attributes.
    ("subclasses", "return ().__class__.__bases__[0].__subclasses__()", C, "__class__"),
    ("mro-dunder", "return [].__class__.__mro__[-1].__subclasses__()", C, "__class__"),
    ("mro-method", "return Exception.mro()[-1]", V, "mro"),
    ("function-globals", "f = lambda: 0\nreturn f.__globals__['__builtins__']", C, "__globals__"),
    ("builtins-name", "return __builtins__['open']", C, "__builtins__"),
    ("dunder-import-name", "return __import__('os').system('id')", C, "__import__"),
    ("dict-dunder", "return ctx.__dict__", C, "__dict__"),
    ("bound-method-self", "return print.__self__", C, "__self__"),
    ("private-attribute", "import random\nreturn random._os", C, "_os"),
    ("private-import", "from random import _os\nreturn _os", C, "_os"),
    # type() and metaclass tricks.
    ("type-one-arg", "return type(ctx)", V, "type()"),
    ("type-three-args", "return type('X', (), {'__init__': None})", V, "type()"),
    ("class-statement", "class X:\n    pass\nreturn X", C, "class definitions"),
    ("metaclass", "class X(metaclass=print):\n    pass\nreturn X", C, "class definitions"),
    ("object-builtin", "return object().__reduce_ex__(2)", C, "__reduce_ex__"),
    ("object-call", "return object()", V, "object()"),
    ("super-builtin", "return super()", V, "super()"),
    # Computed attribute names.
    ("getattr-computed", "name = '__cla' + 'ss__'\nreturn getattr((), name)", V, "getattr()"),
    ("getattr-plain", "return getattr(ctx, 'items')", V, "getattr()"),
    ("hasattr", "return hasattr(ctx, '__class__')", V, "hasattr()"),
    ("setattr", "setattr(ctx, 'x', 1)", V, "setattr()"),
    ("vars", "return vars()", V, "vars()"),
    ("globals", "return globals()['__builtins__']", V, "globals()"),
    ("locals", "return locals()", V, "locals()"),
    ("dir", "return dir(ctx)", V, "dir()"),
    # Imports: only curated views of the allowed modules, never a module object.
    ("import-os", "import os\nreturn os.system('id')", V, "'os'"),
    ("import-os-path", "import os.path\nreturn os.path", V, "'os.path'"),
    ("import-subprocess", "import subprocess\nreturn subprocess.run(['id'])", V, "'subprocess'"),
    ("import-builtins", "import builtins\nreturn builtins.open", C, "reserved name"),
    ("import-importlib", "import importlib\nreturn importlib.import_module('os')", V, "'importlib'"),
    ("import-private-module", "import _thread\nreturn _thread", C, "_thread"),
    ("relative-import", "from . import worker\nreturn worker", V, "relative"),
    ("json-codecs", "import json\nreturn json.codecs.open", R, "has no attribute 'codecs'"),
    ("from-json-import-decoder", "from json import decoder\nreturn decoder.re", V, "'decoder'"),
    ("from-json-import-scanner", "from json import scanner\nreturn scanner", V, "'scanner'"),
    ("from-collections-import-abc", "from collections import abc\nreturn abc", V, "'abc'"),
    ("re-enum", "import re\nreturn re.enum.sys", R, "has no attribute 'enum'"),
    ("re-functools", "import re\nreturn re.functools", R, "has no attribute 'functools'"),
    ("datetime-sys", "import datetime\nreturn datetime.sys.modules", R, "has no attribute 'sys'"),
    ("statistics-sys", "import statistics\nreturn statistics.sys", R, "has no attribute 'sys'"),
    ("random-os", "import random\nreturn random.os", R, "has no attribute 'os'"),
    ("math-loader", "import math\nreturn math.__loader__", C, "__loader__"),
    ("module-mutation", "import json\njson.loads = print\nreturn 1", V, "modules cannot be modified"),
    ("module-setattr", "import math\nsetattr(math, 'pi', 3)", V, "setattr()"),
    ("decimal-default-context", "import decimal\nreturn decimal.DefaultContext", R, "DefaultContext"),
    # Files, sockets, processes, threads, environment.
    ("open", "return open('/etc/passwd').read()", V, "open()"),
    ("open-via-alias", "f = open\nreturn f('/etc/passwd')", V, "open()"),
    ("import-socket", "import socket\nreturn socket.socket()", V, "'socket'"),
    ("import-threading", "import threading\nreturn threading.Thread", V, "'threading'"),
    ("import-multiprocessing", "import multiprocessing\nreturn 1", V, "'multiprocessing'"),
    ("import-ctypes", "import ctypes\nreturn 1", V, "'ctypes'"),
    ("import-pathlib", "import pathlib\nreturn pathlib.Path('/etc/passwd').read_text()", V, "'pathlib'"),
    ("environ", "import os\nreturn dict(os.environ)", V, "'os'"),
    ("exec", "exec('import os')", C, "Exec calls"),
    ("eval", "return eval('1')", C, "Eval calls"),
    ("eval-alias", "f = eval\nreturn f('1')", V, "eval()"),
    ("compile", "return compile('1', 'x', 'eval')", V, "compile()"),
    ("breakpoint", "breakpoint()", C, "reserved"),
    ("print-to-file", "print('x', file=ctx)", V, "print(file=...)"),
    ("input", "return input()", V, "input()"),
]


async def test_at_least_forty_escapes() -> None:
    assert len(ESCAPES) >= 40
    assert len({name for name, *_ in ESCAPES}) == len(ESCAPES)


@pytest.mark.parametrize(("code", "expected", "fragment"), [case[1:] for case in ESCAPES], ids=[c[0] for c in ESCAPES])
async def test_escape_is_refused(pool: SandboxPool, code: str, expected: type[SandboxError], fragment: str) -> None:
    with pytest.raises(expected) as caught:
        await pool.run(code, {"input": {}}, timeout_seconds=5)
    assert fragment in str(caught.value)
    if expected in (SandboxCompileError, SandboxViolationError):
        assert caught.value.retryable is False
        assert caught.value.error_type == ("CompileError" if expected is C else "SandboxViolation")


@pytest.mark.parametrize(
    ("code", "fragment"),
    [
        ("return 'x' * 10**10", "limit"),
        ("return [0] * 10**10", "limit"),
        ("return 10**10**10", "limit"),
        ("return pow(10, 10**10)", "limit"),
        ("return 1 << 10**10", "limit"),
        ("x = 2\nx **= 10**10\nreturn x", "limit"),
        ("s = 'ab'\nwhile True:\n    s += s", "limit"),
        ("return 'x'.ljust(10**10)", "memory limit exceeded"),
        ("x = [0] * 30_000_000\nreturn len(x)", "memory limit exceeded"),
        ("a = []\nwhile True:\n    a.append('x' * 10**6)", "memory limit exceeded"),
    ],
    ids=["str-repeat", "list-repeat", "power-tower", "pow-builtin", "lshift", "inplace-pow", "doubling", "ljust",
         "big-list", "leak-loop"],
)  # fmt: skip
async def test_memory_attack_is_stopped(pool: SandboxPool, code: str, fragment: str) -> None:
    started = time.monotonic()
    with pytest.raises(SandboxMemoryError) as caught:
        await pool.run(code, {}, timeout_seconds=5, memory_mb=64)
    assert fragment in str(caught.value)
    assert time.monotonic() - started < 3


@pytest.mark.parametrize(
    "code",
    [
        "while True:\n    pass",
        "import math\nreturn math.factorial(10**8)",
        "import re\nreturn re.match('(a+)+$', 'a' * 64 + 'b')",
    ],
    ids=["infinite-loop", "long-c-call", "redos"],
)
async def test_cpu_attack_is_stopped_by_the_watchdog(pool: SandboxPool, code: str) -> None:
    started = time.monotonic()
    with pytest.raises(SandboxTimeoutError, match=r"timed out after 0\.5 s") as caught:
        await pool.run(code, {}, timeout_seconds=0.5)
    assert 0.45 < time.monotonic() - started < 1.5
    assert (caught.value.retryable, caught.value.error_type) == (True, "TimeoutError")
    assert (await pool.run("return 'still serving'", {}, timeout_seconds=5)).output == "still serving"


async def test_deep_recursion_is_a_clear_runtime_error(pool: SandboxPool) -> None:
    with pytest.raises(SandboxRuntimeError, match=r"RecursionError: maximum recursion depth exceeded \(line 2\)"):
        await pool.run("def f(n):\n    return f(n + 1)\nreturn f(0)", {}, timeout_seconds=5)


async def test_nothing_leaks_from_one_call_to_the_next(solo_pool: SandboxPool) -> None:
    await solo_pool.run("global leaked\nleaked = ctx['secret']\nreturn 1", {"secret": "s3"}, timeout_seconds=5)
    with pytest.raises(SandboxRuntimeError, match="NameError"):
        await solo_pool.run("return leaked", {}, timeout_seconds=5)


async def test_module_state_is_reset_between_calls(solo_pool: SandboxPool) -> None:
    seeded = "import random\nrandom.seed(42)\nreturn random.random()"
    first = (await solo_pool.run(seeded, {}, timeout_seconds=5)).output
    assert (await solo_pool.run(seeded, {}, timeout_seconds=5)).output == first
    await solo_pool.run("import random\nrandom.seed(42)\nreturn 1", {}, timeout_seconds=5)
    unseeded = await solo_pool.run("import random\nreturn random.random()", {}, timeout_seconds=5)
    assert unseeded.output != first

    await solo_pool.run("import decimal\ndecimal.getcontext().prec = 3\nreturn 1", {}, timeout_seconds=5)
    third = await solo_pool.run("import decimal\nreturn str(decimal.Decimal(1) / 3)", {}, timeout_seconds=5)
    assert third.output == "0." + "3" * 28
