"""What may be saved: data-source configs, SQL parameters, HTTP placeholders; and argument binding."""

from __future__ import annotations

from typing import Any

import pytest

from flowdeck.domain.errors import NodeError
from flowdeck.queries.engine import bind_arguments
from flowdeck.queries.errors import QueryValidationError
from flowdeck.queries.models import SavedQuery
from flowdeck.queries.placeholders import render
from flowdeck.queries.validation import async_sql_url, sql_parameters, validate_query, validate_source


def problems(call: Any, *args: Any) -> list[tuple[str, str]]:
    with pytest.raises(QueryValidationError) as failure:
        call(*args)
    return [(p.path, p.message) for p in failure.value.problems]


def test_sql_urls_get_an_async_driver() -> None:
    assert async_sql_url("sqlite:///x.db").drivername == "sqlite+aiosqlite"
    assert async_sql_url("postgresql://u@h/db", "pw").render_as_string(hide_password=False) == (
        "postgresql+asyncpg://u:pw@h/db"
    )
    assert async_sql_url("postgres://u@h/db").drivername == "postgresql+asyncpg"
    with pytest.raises(ValueError, match="not an async driver"):
        async_sql_url("mysql+pymysql://u@h/db")
    with pytest.raises(ValueError, match="unknown database type"):
        async_sql_url("nosuchdb://u@h/db")


@pytest.mark.parametrize(
    ("kind", "config", "secrets", "expected"),
    [
        ("sql", {"url": "postgresql://u@h/db"}, {"password": "p"}, []),
        (
            "sql",
            {"url": "postgresql://u:p@h/db"},
            {},
            [("config.url", "put the password in secrets.password, not in the URL (config is shown)")],
        ),
        (
            "sql",
            {"url": "not a url"},
            {},
            [("config.url", "url is not a database URL (e.g. postgresql+asyncpg://user@host/db)")],
        ),
        (
            "sql",
            {"url": "sqlite://", "pool": 3},
            {"token": "t"},
            [
                ("config.pool", "unknown setting (allowed: readOnly, url)"),
                ("secrets.token", "an sql data source takes only a 'password' secret"),
            ],
        ),
        (
            "http",
            {"baseUrl": "https://api.example.com/v1", "headers": {"Accept": "application/json"}},
            {"Authorization": "x"},
            [],
        ),
        (
            "http",
            {"baseUrl": "https://u:p@api.example.com"},
            {},
            [("config.baseUrl", "baseUrl must not contain a user name or password (send credentials in headers)")],
        ),
        (
            "http",
            {"baseUrl": "file:///etc/passwd"},
            {},
            [("config.baseUrl", "baseUrl must be an http:// or https:// URL")],
        ),
        (
            "http",
            {"baseUrl": "http://h", "timeoutSeconds": 0},
            {"Bad Header": "x"},
            [
                ("secrets.Bad Header", "is not a valid header name"),
                ("config.timeoutSeconds", "timeoutSeconds must be a number in (0, 300]"),
            ],
        ),
        ("ftp", {}, {}, [("kind", "kind must be 'sql' or 'http'")]),
    ],
)
def test_data_source_validation(
    kind: str, config: dict[str, Any], secrets: dict[str, str], expected: list[Any]
) -> None:
    if expected:
        assert problems(validate_source, "src", kind, config, secrets) == expected
    else:
        validate_source("src", kind, config, secrets)


def test_sql_parameters_are_found_as_sqlalchemy_binds_them() -> None:
    assert sql_parameters("SELECT * FROM t WHERE a = :a AND b IN :b_list AND c = '10\\:30' AND d::text = 'x'") == {
        "a",
        "b_list",
    }
    assert validate_query("q", "sql", ["a"], {"sql": "SELECT :a", "extra": 1}) == {"sql": "SELECT :a"}
    assert problems(validate_query, "q", "sql", ["id"], {"sql": "SELECT * FROM t WHERE id = :id::int"}) == [
        ("sql", ":id::type is read as a cast, not a parameter: write CAST(:id AS type)"),
        ("parameters", "parameter 'id' is declared but the sql never uses :id"),
    ]
    assert problems(validate_query, "", "sql", ["1x", "a", "a"], {"sql": ""}) == [
        ("name", "name must be a non-empty string"),
        ("parameters[0]", "a parameter name is a letter or _ then letters, digits, _"),
        ("parameters[2]", "parameter 'a' is declared twice"),
        ("sql", "sql must be a non-empty string"),
    ]


def test_http_queries_declare_their_placeholders() -> None:
    definition = {"method": "post", "path": "/users/{{ id }}", "query": {"q": "{{ term }}"}, "body": {"n": "{{ n }}"}}
    assert validate_query("q", "http", ["id", "term", "n"], definition) == {
        "method": "POST",
        "path": "/users/{{ id }}",
        "query": {"q": "{{ term }}"},
        "body": {"n": "{{ n }}"},
        "headers": {},
    }
    assert problems(validate_query, "q", "http", ["id"], {"path": "/{{ ctx.x }}/{{ other }}", "method": "TRACE"}) == [
        ("method", "method must be one of GET, POST, PUT, PATCH, DELETE, HEAD, OPTIONS"),
        ("path", "{{ ctx.x }}: only {{ name }} of a declared parameter is allowed"),
        ("request", "the request uses {{ other }}, but 'other' is not declared in parameters"),
        ("parameters", "parameter 'id' is declared but the request never uses {{ id }}"),
    ]
    for path in ("https://evil.example.com/x", "//evil.example.com", "/a/../admin", "/a?x=1"):
        assert problems(validate_query, "q", "http", [], {"path": path})[0][0] == "path"


def test_placeholders_keep_native_values_when_alone() -> None:
    args = {"n": 3, "tags": ["a", "b"], "none": None, "flag": True}
    assert render({"n": "{{ n }}", "label": "n={{ n }} {{tags}} {{ none }}{{ flag }}", "k": [1]}, args) == {
        "n": 3, "label": 'n=3 ["a","b"] true', "k": [1]
    }  # fmt: skip


def test_bind_arguments() -> None:
    q = SavedQuery("q", "t", "orders", "s", "sql", ("ids", "doc", "since"), {"sql": "..."}, 0, 0)
    assert bind_arguments(q, {"ids": (1, 2), "doc": {"a": 1}, "since": None}) == {
        "ids": [1, 2],
        "doc": '{"a":1}',
        "since": None,
    }
    with pytest.raises(NodeError) as failure:
        bind_arguments(q, {"ids": [], "x": 1, "y": 2})
    assert failure.value.message == (
        "saved query 'orders': missing arguments 'doc', 'since'; unknown arguments 'x', 'y' "
        "(the query declares: 'ids', 'doc', 'since')"
    )
    assert not failure.value.retryable and failure.value.error_type == "ArgumentError"
