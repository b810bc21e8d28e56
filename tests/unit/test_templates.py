"""The sandboxed template resolver and expression evaluator (SPEC §3)."""

from __future__ import annotations

import copy
import json
import time
from typing import Any

import pytest

from flowdeck.domain.errors import ConfigIssue
from flowdeck.sandbox.templates import (
    MAX_OUTPUT_CHARS,
    MAX_SOURCE_CHARS,
    TemplateError,
    budget,
    evaluate,
    expression_issues,
    referenced_variables,
    render,
    rendering,
    template_issues,
)


def make_ctx() -> dict[str, Any]:
    return {
        "input": {
            "id": 42,
            "name": "Ann",
            "price": 9.5,
            "flag": True,
            "nothing": None,
            "tags": [1, 2],
            "items": ["a", "b", "c"],
            "nested": {"k": {"v": "deep"}},
            "text": "x" * 1000,
        },
        "score": {"value": 12},
        "my-node": {"ok": 1},
    }


CTX = make_ctx()


def refused(template: str, *, within: float = 1.0) -> str:
    """Render ``template``, expect a TemplateError quickly, return its message."""
    started = time.perf_counter()
    with pytest.raises(TemplateError) as info:
        render(template, CTX)
    assert time.perf_counter() - started < within, f"took {time.perf_counter() - started:.2f} s"
    return info.value.message


# ------------------------------------------------------------------------------------ native values


@pytest.mark.parametrize(
    ("template", "expected"),
    [
        ("{{ ctx.input.id }}", 42),
        ("{{ ctx.input.price }}", 9.5),
        ("{{ ctx.input.flag }}", True),
        ("{{ ctx.input.nothing }}", None),
        ("{{ ctx.input.tags }}", [1, 2]),
        ("{{ ctx.input.nested }}", {"k": {"v": "deep"}}),
        ("{{ ctx['input']['nested'].k['v'] }}", "deep"),
        ('{{ ctx["my-node"].ok }}', 1),
        ("{{ ctx.input.tags[1] }}", 2),
        ("{{ ctx.input.tags[-1] }}", 2),
        ("  {{ ctx.input.id }}\n", 42),
        ("{{ '42' }}", "42"),
        ("{{ ctx.input.id|string }}", "42"),
        ("{{ 42 }}", 42),
        ("{{ [1, 'a', none] }}", [1, "a", None]),
        ("{{ {'a': ctx.input.id} }}", {"a": 42}),
        ("{{ (1, 2) }}", [1, 2]),
        ("{{ range(3) }}", [0, 1, 2]),
        ("{{ ctx.input.tags|map('string') }}", ["1", "2"]),
        ("{{ ctx.input.id * 2 + 1 }}", 85),
        ("{{ ctx.input.name|upper }}", "ANN"),
        ("{{ ctx.input.name ~ '!' }}", "Ann!"),
        ("{{ ctx.missing|default('fallback') }}", "fallback"),
        ("{{ ctx.missing is defined }}", False),
        ("{{ 2 ** 10 }}", 1024),
        ("{{ '%s-%d'|format('a', 3) }}", "a-3"),
    ],
)
def test_single_expression_keeps_the_native_type(template: str, expected: Any) -> None:
    value = render(template, CTX)
    assert value == expected
    assert type(value) is type(expected)


def test_tojson_gives_a_json_string() -> None:
    value = render("{{ ctx.score|tojson }}", CTX)
    assert type(value) is str
    assert json.loads(value) == {"value": 12}


def test_dict_keys_win_over_dict_methods() -> None:
    # ``ctx.input.items`` is the workflow data, not ``dict.items``
    assert render("{{ ctx.input.items }}", CTX) == ["a", "b", "c"]
    assert render("{{ ctx.input.items|length }}", CTX) == 3
    assert render("{{ ctx.score.keys()|list }}", CTX) == ["value"]


@pytest.mark.parametrize(
    ("template", "expected"),
    [
        ("order-{{ ctx.input.id }}", "order-42"),
        ("{{ ctx.input.id }}{{ ctx.input.id }}", "4242"),
        ("[{{ ctx.input.id }}]", "[42]"),
        ("{{ ctx.input.flag }} and {{ ctx.input.nothing }}", "True and None"),
        ("{{ ctx.input.tags }}!", "[1, 2]!"),
        ("Hi {{ ctx.input.name|lower }}!", "Hi ann!"),
        ("line {{ ctx.input.id }}\n", "line 42\n"),
        ("a {# comment #}{{ ctx.input.id }}", "a 42"),
        ("{% raw %}{{ literal }}{% endraw %}", "{{ literal }}"),
        ("{{ '42' }} ", "42"),
    ],
)
def test_mixed_string_renders_to_str(template: str, expected: str) -> None:
    value = render(template, CTX)
    assert value == expected
    assert type(value) is str


@pytest.mark.parametrize("text", ["hello", "100% {% if x %}", "{ {x} }", "", "{#", "\x00"])
def test_string_without_braces_is_returned_untouched(text: str) -> None:
    assert render(text, CTX) is text


@pytest.mark.parametrize("value", [1, 2.5, True, None])
def test_non_string_scalars_pass_through(value: Any) -> None:
    assert render(value, CTX) is value


def test_nested_structures_are_resolved_but_keys_are_not() -> None:
    config = {
        "url": "https://x/{{ ctx.input.id }}",
        "{{ key }}": ["{{ ctx.input.tags }}", {"n": "{{ ctx.score.value }}", "plain": "text"}],
        "count": 3,
    }
    assert render(config, CTX) == {
        "url": "https://x/42",
        "{{ key }}": [[1, 2], {"n": 12, "plain": "text"}],
        "count": 3,
    }


def test_rendering_does_not_change_the_input() -> None:
    config = {"a": ["{{ ctx.input.tags }}"]}
    before = copy.deepcopy(config)
    render(config, CTX)
    assert config == before


# ------------------------------------------------------------------------------------ undefined values


@pytest.mark.parametrize(
    ("template", "name"),
    [
        ("{{ ctx.missing }}", "'missing' is undefined"),
        ("{{ ctx.input.missing }}", "'missing' is undefined"),
        ("{{ ctx['missing'] }}", "'missing' is undefined"),
        ("{{ ctx.input.tags[5] }}", "5 is undefined"),
        ("{{ ctx.missing.deeper }}", "'missing' is undefined"),
        ("id-{{ ctx.missing }}", "'missing' is undefined"),
        ("{{ [1, ctx.missing] }}", "'missing' is undefined"),
        ("{{ {'a': [ctx.input.nope]} }}", "'nope' is undefined"),
        ("{{ ctx.missing + 1 }}", "'missing' is undefined"),
        ("{{ 1 if false }}", "evaluated to false and no else section"),
        ("{{ ctx.input.tags|map(attribute='nope')|list }}", "'nope' is undefined"),
    ],
)
def test_undefined_is_an_error_naming_the_path(template: str, name: str) -> None:
    with pytest.raises(TemplateError) as info:
        render({"params": {"p": template}}, CTX)
    assert name in info.value.message
    assert info.value.path == "params.p"
    assert info.value.message.startswith("params.p: ")


def test_template_error_path_uses_the_given_prefix_and_list_indexes() -> None:
    with pytest.raises(TemplateError) as info:
        render({"args": ["ok", "{{ ctx.nope }}"]}, CTX, path="config")
    assert info.value.path == "config.args[1]"


@pytest.mark.parametrize("template", ["{{ x }}", "{{ input.id }}", "{{ loop }}", "{{ self }}", "{{ cycler }}"])
def test_names_other_than_ctx_are_undefined(template: str) -> None:
    assert "is undefined" in refused(template)


def test_output_that_is_not_data_is_refused() -> None:
    assert "not data" in refused("{{ ctx.score.keys }}")
    assert "not data" in refused("{{ dict }}")


# ------------------------------------------------------------------------------- sandbox: attributes


@pytest.mark.parametrize(
    ("template", "attribute"),
    [
        ("{{ ctx.input.__class__ }}", "__class__"),
        ("{{ ctx.input.name.__class__.__mro__ }}", "__class__"),
        ("{{ ''.__class__.__mro__[1].__subclasses__() }}", "__class__"),
        ("{{ ().__class__.__base__.__subclasses__() }}", "__class__"),
        ("{{ ctx.input.tags.__init__.__globals__ }}", "__init__"),
        ("{{ ctx.__getitem__ }}", "__getitem__"),
        ("{{ range.__globals__ }}", "__globals__"),
        ("{{ dict.mro() }}", "mro"),
        ("{{ '{0.__class__}'.format(1) }}", "format"),
        ("{{ 'a'.format_map({}) }}", "format_map"),
        ("{{ ctx.input.name|attr('__class__') }}", "__class__"),
        ("{{ ctx.input.tags|map(attribute='__class__')|list }}", "__class__"),
        ("x {{ ctx.input.__class__ }}", "__class__"),
        ("{{ (1).to_bytes(10, 'big') }}", "to_bytes"),
        ("{{ 'ab'.join(ctx.input.items) }}", "join"),
    ],
)
def test_python_internals_are_refused_with_a_clear_error(template: str, attribute: str) -> None:
    message = refused(template)
    assert attribute in message
    assert "refused" in message or "unsafe" in message


@pytest.mark.parametrize(
    "template",
    [
        "{{ ctx.input.tags.append(3) }}",
        "{{ ctx.input.tags.pop() }}",
        "{{ ctx.input.tags.clear() }}",
        "{{ ctx.input.nested.update({'k': 1}) }}",
        "{{ ctx.input.nested.setdefault('z', 1) }}",
        "{{ ctx.input.nested.pop('k') }}",
        "{{ ctx.input.tags.sort() }}",
    ],
)
def test_templates_cannot_mutate_the_run_data(template: str) -> None:
    ctx = make_ctx()
    with pytest.raises(TemplateError, match="refused"):
        render(template, ctx)
    assert ctx == make_ctx()


@pytest.mark.parametrize(
    "template",
    [
        "{% for x in ctx.input.tags %}{{ x }}{% endfor %}",
        "{% set a = 1 %}{{ a }}",
        "{% macro f() %}{% endmacro %}{{ 1 }}",
        "{{ 1 }}{% if true %}x{% endif %}",
        "{% include 'x' %}{{ 1 }}",
    ],
)
def test_statements_are_refused(template: str) -> None:
    assert "{% statements %} are not supported" in refused(template)


# -------------------------------------------------------------------------------- sandbox: resources


@pytest.mark.parametrize(
    ("template", "reason"),
    [
        ("{{ 10 ** (10 ** 10) }}", "power is larger"),
        ("{{ (10 ** 100) ** (10 ** 100) }}", "power is larger"),
        ("{{ 'x' * 10 ** 9 }}", "repeating a sequence"),
        ("{{ 10 ** 9 * 'x' }}", "repeating a sequence"),
        ("{{ [1, 2] * 10 ** 9 }}", "repeating a sequence"),
        ("{{ (ctx.input.text * 1000) * 1000 }}", "repeating a sequence"),
        ("{{ (10 ** 1000) * (10 ** 1000) * (10 ** 1000) * (10 ** 1000) * (10 ** 1000) }}", "product is larger"),
        ("{{ range(10 ** 9) }}", "MAX_RANGE"),
        ("{{ 'x'|center(10 ** 9) }}", "|center width"),
        ("{{ 'x'|indent(10 ** 9) }}", "|indent"),
        ("{{ '%1000000000s'|format(1) }}", "format width"),
        ("{{ '%*s' % (10 ** 9, 'x') }}", "format width"),
        ("{{ '%.999999999f' % 1.5 }}", "format width"),
        ("{{ range(100000)|join(ctx.input.text) }}", "|join"),
        ("{{ ctx.input.text|replace('', ctx.input.text ~ ctx.input.text) }}", "|replace"),
        ("{{ ctx.input.text|wordwrap(1, wrapstring=ctx.input.text ~ ctx.input.text) }}", "|wordwrap"),
        ("{{ [1]|batch(10 ** 9, 'x')|list }}", "|batch size"),
        ("{{ [1]|slice(10 ** 9)|list }}", "|slice count"),
        ("{{ range(100000)|batch(1)|sum(start=[]) }}", "|sum adds numbers only"),
        ("{{ ctx.input.tags|tojson(indent=10 ** 6) }}", "indent"),
        ("{{ range(100000)|map('center', 1000)|list|length }}", "in total"),
        ("{{ ((range(100000)|list) * 10) + (range(100000)|list) }}", "adding two sequences"),
        ("{{ [" + "(range(100000)|list) * 10, " * 9 + "] }}", "in total"),
        ("{{ 'x'|center(1000000) ~ 'x'|center(1000000) ~ 'x'|center(1000000) }}", "~ would produce"),
        ("{{ ctx.input.text|urlize }}", "no filter named 'urlize'"),
    ],
)
def test_resource_bombs_are_refused_quickly(template: str, reason: str) -> None:
    assert reason in refused(template)


def test_nothing_big_is_folded_at_compile_time() -> None:
    # Jinja folds constant filter calls while compiling; here that would embed a 1M-item list in the code
    started = time.perf_counter()
    assert render("{{ 'x'|center(1000000)|list|length }}", {}) == 1_000_000
    assert time.perf_counter() - started < 10.0  # stopped by the limit, not run to its end


def test_the_deadline_counts_work_not_a_stopped_or_starved_process(monkeypatch: pytest.MonkeyPatch) -> None:
    """The chaos suite froze a worker (SIGSTOP) mid-render: on the wall clock a one-line template "ran longer
    than 1 s" and its node failed for good. The budget is the thread's CPU time."""
    guard = budget.Guard()
    woken = time.monotonic() + 3600.0  # what a stopped process sees on waking: an hour passed, none of it spent here
    monkeypatch.setattr(budget.time, "monotonic", lambda: woken)
    monkeypatch.setattr(budget.time, "time", lambda: woken)
    guard.tick()


def test_source_length_is_capped() -> None:
    assert "longer than" in refused("{{ 1 }}" + "x" * MAX_SOURCE_CHARS)
    assert any("longer than" in issue.message for issue in template_issues("{{ 1 }}" + "x" * MAX_SOURCE_CHARS, "p"))


def test_rendered_output_length_is_capped() -> None:
    ctx = {"big": "y" * (MAX_OUTPUT_CHARS // 2 + 1)}
    for template in ("{{ ctx.big }}-{{ ctx.big }}", "{{ ctx.big|upper }}{{ ctx.big|upper }}"):
        with pytest.raises(TemplateError, match="rendered text is longer"):
            render(template, ctx)


def test_slow_templates_hit_the_deadline(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(budget, "TIME_LIMIT_SECONDS", 0.05)
    started = time.perf_counter()
    with pytest.raises(TemplateError, match="ran longer than"):
        render("{{ range(100000)|map('string')|join|length }}" * 50, {})
    assert time.perf_counter() - started < 1.0


@pytest.mark.parametrize(
    "template",
    [
        "{{ " + "(" * 3000 + "1" + ")" * 3000 + " }}",
        "{{ " + "[" * 3000 + "]" * 3000 + " }}",
        "{{ 1" + " + 1" * 5000 + " }}",
        "{{ 'a'" + "|upper" * 3000 + " }}",
    ],
)
def test_deeply_nested_sources_fail_cleanly(template: str) -> None:
    assert refused(template, within=2.0)


# ------------------------------------------------------------------------------------------ evaluate


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        ("ctx.score.value > 10", True),
        ("ctx.score.value > 100", False),
        ("ctx['score'].value * 2", 24),
        ("ctx.input.tags", [1, 2]),
        ("ctx.input.name == 'Ann' and ctx.input.flag", True),
        ("'b' in ctx.input.items", True),
        ("ctx.input.items|length", 3),
        ("ctx.input.nothing", None),
        ("'42'", "42"),
        ("ctx.missing is not defined", True),
    ],
)
def test_evaluate_returns_native_values(expression: str, expected: Any) -> None:
    value = evaluate(expression, CTX)
    assert value == expected
    assert type(value) is type(expected)


@pytest.mark.parametrize(
    ("expression", "message"),
    [
        ("ctx.missing > 1", "'missing' is undefined"),
        ("ctx.missing", "'missing' is undefined"),
        ("ctx.input.__class__", "__class__"),
        ("ctx.score.value / 0", "ZeroDivisionError"),
        ("ctx.score.value >", "syntax error"),
        ("ctx.a }} {{ ctx.b", "syntax error"),
        ("", "syntax error"),
        ("10 ** (10 ** 10)", "power is larger"),
    ],
)
def test_evaluate_errors(expression: str, message: str) -> None:
    with pytest.raises(TemplateError) as info:
        evaluate(expression, CTX)
    assert message in info.value.message
    assert info.value.path is None


def test_evaluate_refuses_non_strings() -> None:
    with pytest.raises(TemplateError, match="must be a string"):
        evaluate(42, CTX)  # type: ignore[arg-type]


# ----------------------------------------------------------------------------- referenced variables


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("{{ ctx.a }}", {"a"}),
        ("{{ ctx['b'].x }} and {{ ctx[\"c\"] }}", {"b", "c"}),
        ("{{ ctx.a.b.c }}", {"a"}),
        ("{{ ctx.get('d') }}", {"d"}),
        ("{{ ctx.items }}", {"items"}),
        ("{{ ctx.keys() }}", set()),
        ("{{ ctx[key] }}", set()),
        ("{{ ctx }}", set()),
        ("plain ctx.a text", set()),
        ("{{ broken", set()),
        ({"x": ["{{ ctx.a }}", {"y": "{{ ctx.b|default(ctx.c) }}"}], "z": 3}, {"a", "b", "c"}),
        ("{{ ctx.a if ctx.b else ctx.input.c }}", {"a", "b", "input"}),
    ],
)
def test_referenced_variables_of_templates(value: Any, expected: set[str]) -> None:
    assert referenced_variables(value) == expected


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        ("ctx.score.value > 10", {"score"}),
        ("ctx['a'] or ctx.b", {"a", "b"}),
        ("ctx.flag", {"flag"}),
        ("ctx.get('x')", {"x"}),
        ("1 > 0", set()),
        ("ctx.a >", set()),
    ],
)
def test_referenced_variables_of_expressions(expression: str, expected: set[str]) -> None:
    assert referenced_variables(expression, expression=True) == expected


# ------------------------------------------------------------------------------------- syntax issues


@pytest.mark.parametrize(
    ("expression", "fragment"),
    [
        ("ctx.a >", "syntax error"),
        ("ctx.a }} b", "syntax error"),
        ("ctx.a|nofilter", "no filter named 'nofilter'"),
        ("ctx.a is nottest", "no test named 'nottest'"),
        ("score.value > 1", "'score' is undefined"),
        ("x" * (MAX_SOURCE_CHARS + 1), "longer than"),
    ],
)
def test_expression_issues(expression: str, fragment: str) -> None:
    issues = expression_issues(expression, "config.branches[0].expression")
    assert issues
    assert all(issue.path == "config.branches[0].expression" for issue in issues)
    assert any(fragment in issue.message for issue in issues)


@pytest.mark.parametrize("expression", ["ctx.a > 1", "ctx.input.items|length == 0", "true", "ctx.a is defined"])
def test_valid_expressions_have_no_issues(expression: str) -> None:
    assert expression_issues(expression, "p") == []


def test_template_issues_walk_nested_values_with_paths() -> None:
    value = {"ok": "{{ ctx.a }}", "bad": ["x", "{{ ctx.a"], "deep": {"f": "{{ ctx.a|nofilter }}"}, "stmt": "{% if %}"}
    issues = template_issues(value, "config.args")
    assert [issue.path for issue in issues] == ["config.args.bad[1]", "config.args.deep.f"]
    assert "syntax error" in issues[0].message
    assert issues[1] == ConfigIssue("config.args.deep.f", "no filter named 'nofilter'")


def test_template_issues_report_statements() -> None:
    issues = template_issues("{% for x in y %}{{ x }}{% endfor %}", "config.p")
    assert any("statements" in issue.message for issue in issues)


@pytest.mark.parametrize("value", [None, 1, [], {}, "no template", ["{{ ctx.a }}", {"k": "{{ 1 + 1 }}"}]])
def test_valid_or_plain_values_have_no_template_issues(value: Any) -> None:
    assert template_issues(value, "p") == []


def test_hostile_nesting_does_not_break_the_issue_walk() -> None:
    value: Any = "{{ ctx.a"
    for _ in range(5000):
        value = [value]
    issues = template_issues(value, "p")
    assert len(issues) == 1
    assert issues[0].path.startswith("p[0][0][0]")
    assert issues[0].path.endswith("…")  # deep paths are cut short so the walk stays linear


# -------------------------------------------------------------------------------------- performance


def test_compiled_templates_are_cached() -> None:
    render("{{ ctx.input.id + 1000 }}", CTX)
    before = rendering._compile_template.cache_info().hits
    for _ in range(5):
        assert render("{{ ctx.input.id + 1000 }}", CTX) == 1042
    assert rendering._compile_template.cache_info().hits == before + 5


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("false", False), ("FALSE", False), (" No ", False), ("off", False), ("0", False), ("null", False),
        ("None", False), ("", False), ("yes", True), ("true", True), ("falsey", True), ("0.0", True),
        (0, False), (1, True), ([], False), ([0], True), (None, False), ({}, False), (0.0, False),
    ],
)  # fmt: skip
def test_truthy_reads_outside_strings_as_people_mean_them(value: Any, expected: bool) -> None:
    ctx = {"input": {"flag": value}}
    assert evaluate("ctx.input.flag is truthy", ctx) is expected
    assert evaluate("ctx.input.flag | truthy", ctx) is expected
    assert render("{{ 'yes' if ctx.input.flag is truthy else 'no' }}", ctx) == ("yes" if expected else "no")


def test_plain_truthiness_stays_pythons() -> None:
    assert evaluate("'false' and True", {}) is True  # a non-empty string is true unless asked for truthy
