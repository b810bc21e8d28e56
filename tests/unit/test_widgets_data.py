"""A run's output -> each widget type's data; paths that do not resolve name the field and what was found."""

from __future__ import annotations

from typing import Any

import pytest

from flowdeck.widgets.config import parse_config
from flowdeck.widgets.errors import ConfigError, PathError
from flowdeck.widgets.paths import parse_path, resolve
from flowdeck.widgets.process import MAX_ROWS, widget_data

ORDERS = {
    "orders": [
        {"id": 1, "customer": {"name": "Ada"}, "total": 12.5, "day": "2026-01-02"},
        {"id": 2, "customer": {"name": "Bob"}, "total": None, "day": 1795243138},
    ]
}


def data(widget_type: str, config: dict[str, Any], output: Any, previous: Any = None) -> dict[str, Any]:
    return widget_data(parse_config(widget_type, "replay", config), output, previous)


def error(widget_type: str, config: dict[str, Any], output: Any) -> PathError:
    with pytest.raises(PathError) as caught:
        data(widget_type, config, output)
    return caught.value


def test_paths_walk_objects_and_lists() -> None:
    assert parse_path("", "f") == ()
    assert resolve({"a": [{"b": 1}, {"b": 2}]}, parse_path("a.1.b", "f"), "f") == 2
    assert resolve([10, 20], ("1",), "f") == 20
    assert resolve({"0": "key"}, ("0",), "f") == "key"
    with pytest.raises(ConfigError):
        parse_path("a.", "config.path")


def test_a_table_has_keyed_columns_and_rows() -> None:
    config = {
        "rowsPath": "orders",
        "columns": [
            {"path": "id", "label": "#"},
            {"path": "customer.name"},
            {"path": "total", "format": "currency", "currency": "EUR"},
            {"path": "day", "format": "date"},
        ],
        "pageSize": 10,
        "sort": {"column": 2, "direction": "desc"},
    }
    assert data("table", config, ORDERS) == {
        "columns": [
            {"key": "c0", "label": "#", "format": "text", "currency": None},
            {"key": "c1", "label": "customer.name", "format": "text", "currency": None},
            {"key": "c2", "label": "total", "format": "currency", "currency": "EUR"},
            {"key": "c3", "label": "day", "format": "date", "currency": None},
        ],
        "rows": [
            {"c0": 1, "c1": "Ada", "c2": 12.5, "c3": "2026-01-02"},
            {"c0": 2, "c1": "Bob", "c2": None, "c3": 1795243138},
        ],
        "total": 2,
        "pageSize": 10,
        "sort": {"column": 2, "direction": "desc"},
        "truncated": False,
    }


def test_a_table_stops_at_ten_thousand_rows() -> None:
    rows = [{"n": i} for i in range(MAX_ROWS + 5)]
    table = data("table", {"columns": [{"path": "n", "format": "number"}]}, rows)
    assert len(table["rows"]) == MAX_ROWS and table["total"] == MAX_ROWS + 5 and table["truncated"] is True


def test_a_chart_has_labels_and_a_list_of_values_per_series() -> None:
    config = {"chartType": "line", "rowsPath": "orders", "labelPath": "id", "series": [{"path": "total", "label": "T"}]}
    assert data("chart", config, ORDERS) == {
        "chartType": "line",
        "labels": [1, 2],
        "series": [{"label": "T", "values": [12.5, None]}],
    }


def test_a_metric_compares_with_the_previous_output() -> None:
    config = {"valuePath": "sum.total", "label": "Revenue", "format": "currency", "currency": "JPY"}
    assert data("metric", config, {"sum": {"total": 150}}, {"sum": {"total": 120}}) == {
        "label": "Revenue",
        "value": 150,
        "format": "currency",
        "currency": "JPY",
        "unit": None,
        "previous": 120,
        "change": 30,
        "changePercent": 25.0,
    }
    first = data("metric", config, {"sum": {"total": 5}})
    assert (first["previous"], first["change"], first["changePercent"]) == (None, None, None)
    from_zero = data("metric", config, {"sum": {"total": 5}}, {"sum": {"total": 0}})
    assert (from_zero["change"], from_zero["changePercent"]) == (5, None)
    reshaped = data("metric", config, {"sum": {"total": 5}}, {"other": 1})
    assert reshaped["previous"] is None  # an older output without the value is no comparison, not an error
    negative = data("metric", config, {"sum": {"total": -5}}, {"sum": {"total": -10}})
    assert negative["changePercent"] == 50.0


def test_text_is_markdown_and_json_is_the_value() -> None:
    assert data("text", {"path": "md"}, {"md": "**bold**"}) == {"html": "<p><strong>bold</strong></p>\n"}
    assert data("json", {"path": "a", "expandDepth": 0}, {"a": [1, {"b": None}]}) == {
        "value": [1, {"b": None}],
        "expandDepth": 0,
    }
    assert data("json", {}, None) == {"value": None, "expandDepth": 2}


@pytest.mark.parametrize(
    ("widget_type", "config", "output", "field", "message"),
    [
        (
            "table",
            {"rowsPath": "orders", "columns": [{"path": "price"}]},
            ORDERS,
            "config.columns[0].path",
            '"price" is missing in row 0 (keys: id, customer, total, day)',
        ),
        (
            "table",
            {"rowsPath": "orders", "columns": [{"path": "customer.age"}]},
            ORDERS,
            "config.columns[0].path",
            '"customer.age" is missing in row 0 (keys of "customer": name)',
        ),
        (
            "table",
            {"rowsPath": "order", "columns": [{"path": "id"}]},
            ORDERS,
            "config.rowsPath",
            '"order" is missing in the output (keys: orders)',
        ),
        (
            "table",
            {"rowsPath": "orders.0", "columns": [{"path": "id"}]},
            ORDERS,
            "config.rowsPath",
            '"orders.0" is an object in the output, expected a list of objects',
        ),
        (
            "table",
            {"columns": [{"path": "id"}]},
            [{"id": 1}, 7],
            "config.rowsPath",
            "row 1 is a number, expected an object",
        ),
        (
            "table",
            {"columns": [{"path": "id", "format": "percent"}]},
            [{"id": "x"}],
            "config.columns[0].path",
            '"id" is a string in row 0, expected a number (format percent)',
        ),
        (
            "table",
            {"columns": [{"path": "d", "format": "datetime"}]},
            [{"d": [1]}],
            "config.columns[0].path",
            '"d" is a list in row 0, expected a date string or epoch seconds (format datetime)',
        ),
        (
            "chart",
            {"chartType": "bar", "labelPath": "l", "series": [{"path": "v"}]},
            [{"l": "a", "v": True}],
            "config.series[0].path",
            '"v" is a boolean in row 0, expected a number',
        ),
        (
            "chart",
            {"chartType": "bar", "labelPath": "l", "series": [{"path": "v"}]},
            [{"l": {}, "v": 1}],
            "config.labelPath",
            '"l" is an object in row 0, expected a string or a number',
        ),
        (
            "chart",
            {"chartType": "bar", "labelPath": "l", "series": [{"path": "v"}]},
            [{"v": 1}],
            "config.labelPath",
            '"l" is missing in row 0 (keys: v)',
        ),
        (
            "metric",
            {"valuePath": "n", "label": "N"},
            {"n": "12"},
            "config.valuePath",
            '"n" is a string in the output, expected a number',
        ),
        (
            "metric",
            {"valuePath": "a.b", "label": "N"},
            {"a": 3},
            "config.valuePath",
            '"a.b" is missing in the output ("a" is a number)',
        ),
        (
            "text",
            {"path": "md"},
            {"md": None},
            "config.path",
            '"md" is null in the output, expected a string of Markdown',
        ),
        (
            "json",
            {"path": "list.2"},
            {"list": [1, 2]},
            "config.path",
            '"list.2" is missing in the output ("list" is a list of 2)',
        ),
        ("json", {"path": "x"}, [1], "config.path", '"x" is missing in the output (the value is a list of 1)'),
        ("json", {"path": "x"}, None, "config.path", '"x" is missing in the output (the value is null)'),
    ],
)
def test_a_path_that_does_not_resolve_says_what_it_found(
    widget_type: str, config: dict[str, Any], output: Any, field: str, message: str
) -> None:
    failure = error(widget_type, config, output)
    assert (failure.field, failure.message) == (field, message)
    assert str(failure) == f"{field}: {message}"
