"""Text widgets render safe HTML; sync widgets build their run input from query parameters."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

from flowdeck.widgets.config import InputSpec
from flowdeck.widgets.errors import InputParamError
from flowdeck.widgets.inputs import build_input
from flowdeck.widgets.markdown import render_markdown


def test_markdown_renders_with_raw_html_escaped() -> None:
    html = render_markdown(
        "# Title\n\n<script>alert(1)</script>\n\n<img src=x onerror=alert(1)>\n\n| a |\n|---|\n| 1 |"
    )
    assert html.startswith("<h1>Title</h1>")
    assert "<script>" not in html and "&lt;script&gt;" in html and "<img" not in html
    assert "<table>" in html


@pytest.mark.parametrize(
    "link",
    [
        "javascript:alert(1)",
        "JaVaScRiPt:alert(1)",
        "vbscript:x",
        "data:text/html;base64,PHNjcmlwdD4=",
        "file:///etc/passwd",
        "javas&#99;ript:alert(1)",
        "java\tscript:alert(1)",
    ],
)
def test_unsafe_links_are_dropped(link: str) -> None:
    html = render_markdown(f"[click]({link}) ![img]({link})")
    assert "href=" not in html and "src=" not in html, html


def test_safe_links_open_a_new_tab_without_a_referrer() -> None:
    html = render_markdown("[a](https://example.com/x?y=1) [b](/relative) [c](mailto:me@example.com) [d](#top)")
    for href in ("https://example.com/x?y=1", "/relative", "mailto:me@example.com", "#top"):
        assert f'href="{href}"' in html
    assert html.count('target="_blank"') == 4 and html.count('rel="noopener noreferrer nofollow"') == 4


def spec(**fields: Any) -> InputSpec:
    return msgspec.convert(fields, InputSpec)


SPECS = [
    spec(param="q", field="query", required=True),
    spec(param="n", field="limit", type="number", default=10),
    spec(param="all", field="everything", type="boolean"),
    spec(param="f", field="filter", type="json"),
]


def test_query_parameters_become_the_run_input() -> None:
    query = {"q": ["shoes"], "n": ["25"], "all": ["yes"], "f": ['{"colour": ["red"]}']}
    assert build_input(SPECS, query) == {
        "query": "shoes",
        "limit": 25,
        "everything": True,
        "filter": {"colour": ["red"]},
    }
    assert build_input(SPECS, {"q": ["x"], "n": ["2.5"], "all": ["0"]}) == {
        "query": "x",
        "limit": 2.5,
        "everything": False,
    }
    assert build_input(SPECS, {"q": [""]}) == {"query": "", "limit": 10}  # defaults fill in, unset stays out
    assert build_input([], {}) == {}


@pytest.mark.parametrize(
    ("query", "param", "words"),
    [
        ({}, "q", "is required"),
        ({"q": ["a"], "n": ["ten"]}, "n", "not a valid number"),
        ({"q": ["a"], "n": ["inf"]}, "n", "not a valid number"),
        ({"q": ["a"], "all": ["maybe"]}, "all", "not a valid boolean"),
        ({"q": ["a"], "f": ["{oops"]}, "f", "not a valid json"),
        ({"q": ["a", "b"]}, "q", "more than once"),
        ({"q": ["a"], "colour": ["red"]}, "colour", "takes no query parameter 'colour' (it takes: all, f, n, q)"),
    ],
)
def test_a_bad_query_parameter_is_named(query: dict[str, list[str]], param: str, words: str) -> None:
    with pytest.raises(InputParamError) as caught:
        build_input(SPECS, query)
    assert caught.value.field == param and words in caught.value.message and caught.value.source == "query"
