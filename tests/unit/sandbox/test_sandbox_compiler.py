"""Compiling node code (bounded, user line numbers, cached) and the policy's guards, in-process."""

from __future__ import annotations

import time

import pytest

from flowdeck.domain.errors import ConfigIssue
from flowdeck.sandbox import policy
from flowdeck.sandbox.compiler import (
    MAX_SOURCE_BYTES,
    CodeCompileError,
    check_code,
    compile_cached,
    compile_code,
)
from flowdeck.sandbox.worker import OutputError, to_json_value


def test_valid_code_has_no_issues() -> None:
    assert check_code("import math\nreturn {'r': math.sqrt(ctx['x'])}") == []


def test_empty_code_is_an_issue() -> None:
    assert check_code("  \n") == [ConfigIssue(path="config.code", message="code must not be empty")]


def test_syntax_error_names_the_users_line() -> None:
    (issue,) = check_code("x = 1\n\ny = (\n")
    assert issue.path == "config.code"
    assert issue.message == "SyntaxError: '(' was never closed (line 3)"


def test_every_restricted_problem_is_reported_with_its_line() -> None:
    issues = check_code("a = ctx.__class__\nb = 1\nc = a._private\n")
    assert [issue.message for issue in issues] == [
        '"__class__" is an invalid attribute name because it starts with "_". (line 1)',
        '"_private" is an invalid attribute name because it starts with "_". (line 3)',
    ]


def test_compile_error_exposes_the_first_line() -> None:
    with pytest.raises(CodeCompileError) as caught:
        compile_code("x = 1\nclass A:\n    pass\n")
    assert caught.value.line == 2
    assert "class definitions are not allowed" in str(caught.value)


def test_multiline_strings_keep_their_indentation() -> None:
    namespace: dict[str, object] = {}
    exec(compile_code('return """a\n  b"""'), {"__builtins__": {}}, namespace)  # trusted test code
    function = namespace["user_fn"]
    assert callable(function)
    assert function({}) == "a\n  b"


def test_compiled_code_is_cached_by_source() -> None:
    assert compile_cached("return 41 + 1") is compile_cached("return 41 + 1")
    with pytest.raises(CodeCompileError):
        compile_cached("return (")
    with pytest.raises(CodeCompileError):
        compile_cached("return (")


@pytest.mark.parametrize(
    ("code", "fragment"),
    [
        ("# " + "x" * MAX_SOURCE_BYTES, "longer than 32 KiB"),
        ("x = " + "(" * 60 + ")" * 60, "brackets are nested more than 50 levels deep (line 1)"),
        ("".join("    " * i + "if 1:\n" for i in range(60)) + "    " * 60 + "pass\n", "indented more than 160 columns"),
        ("x = f'" + "{1}" * 2000 + "'", "an f-string is longer than 4096 characters"),
        ("x = 1\n" * 3000, "more than 10000 syntax elements"),
        ("x = " + "1 + " * 120 + "1", "nested more than 100 levels deep"),
        ("x = a" + ".b" * 90 + "\n" * 2 + ("y = a" + ".b" * 90 + "\n") * 5, "chained too deeply"),
        ("def f():\n    pass\n" * 301, "more than 300 functions"),
        ("x = " + "-" * 30000 + "1", "nested too deeply to compile"),
        ("x = 1\0", "null bytes"),
    ],
    ids=["size", "brackets", "indentation", "fstring", "nodes", "depth", "chains", "functions", "unary-chain", "nul"],
)
def test_absurd_code_is_refused_quickly(code: str, fragment: str) -> None:
    started = time.perf_counter()
    issues = check_code(code)
    assert time.perf_counter() - started < 1.0  # measured worst case is ~70 ms; this is a generous bound
    assert len(issues) == 1
    assert fragment in issues[0].message


def test_brackets_inside_strings_and_comments_do_not_count() -> None:
    assert check_code("x = '" + "(" * 80 + "'  # " + "[" * 80 + "\nreturn x") == []


@pytest.mark.parametrize(
    ("call", "allowed"),
    [
        (lambda: policy.guarded_getattr("s", "upper"), True),
        (lambda: policy.guarded_getattr("s", "format"), False),
        (lambda: policy.guarded_getattr(str, "format_map"), False),
        (lambda: policy.guarded_getattr(Exception, "mro"), False),
        (lambda: policy.guarded_getattr(object(), "__class__"), False),
        (lambda: policy.guarded_getattr(object(), "gi_frame"), False),
        (lambda: policy.guarded_mul("ab", 3), True),
        (lambda: policy.guarded_mul(3, [0]), True),
        (lambda: policy.guarded_mul(2**25 + 1, [0]), False),
        (lambda: policy.guarded_pow(2, 1000), True),
        (lambda: policy.guarded_pow(10, 10**9), False),
        (lambda: policy.guarded_pow(10, 10**9, 7), True),
        (lambda: policy.guarded_lshift(1, 10**8), False),
        (lambda: policy.guarded_inplacevar("+=", [1], [2]), True),
        (lambda: policy.guarded_write({}), True),
        (lambda: policy.guarded_write(policy.ModuleView("m", {})), False),
    ],
)
def test_guards(call: object, allowed: bool) -> None:
    assert callable(call)
    if allowed:
        call()
    else:
        with pytest.raises((policy.PolicyViolationError, policy.SandboxLimitError)):
            call()


def test_module_views_hold_no_modules_and_no_name() -> None:
    with pytest.raises(ValueError, match="must not be exposed"):
        policy.ModuleView("json", {"codecs": time})
    view = policy.ModuleView("json", {"dumps": str})
    assert not hasattr(view, "__name__")  # CPython's `from X import Y` fallback reads it from sys.modules
    assert repr(view) == "<module 'json' (sandboxed)>"


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ({"a": (1, 2.5, None, True)}, {"a": [1, 2.5, None, True]}),
        ({1: "x", None: "y", 2.5: "z", False: "w"}, {"1": "x", "null": "y", "2.5": "z", "false": "w"}),
        (2**100, 2**100),
    ],
)
def test_output_becomes_plain_json(value: object, expected: object) -> None:
    assert to_json_value(value, 1_000_000) == expected


def test_output_budget_is_enforced() -> None:
    with pytest.raises(OutputError, match="larger than"):
        to_json_value(["x" * 1000] * 2000, 1024 * 1024)
