"""Which ctx keys a python node's code reads (the node details view lists them): found without running it."""

from __future__ import annotations

from flowdeck.sandbox.code_reads import code_reads


def test_key_lookups_are_reads() -> None:
    assert code_reads("item = ctx['loop']['item']\nreturn ctx.get('score', 0) + item") == {"loop", "score"}
    assert code_reads('return ctx["input"]["id"]') == {"input"}


def test_a_label_reads_nothing() -> None:
    assert code_reads("ctx.label('k', 'v')\nreturn 1") == set()


def test_any_other_use_of_ctx_could_read_anything() -> None:
    assert code_reads("return {k: v for k, v in ctx.items()}") is None
    assert code_reads("return ctx[name]") is None
    assert code_reads("ctx = {}\nreturn ctx") is None


def test_code_that_does_not_parse_reads_unknown() -> None:
    assert code_reads("return (") is None
