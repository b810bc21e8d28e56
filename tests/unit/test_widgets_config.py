"""Widget configs: every type accepted with its defaults, every refusal naming its field."""

from __future__ import annotations

from typing import Any

import pytest

from flowdeck.widgets.config import ChartConfig, JsonConfig, MetricConfig, TableConfig, TextConfig, parse_config
from flowdeck.widgets.errors import ConfigError
from flowdeck.widgets.frames import check_frame_ancestors, embed_csp

COLUMNS = [{"path": "id"}]


def refusal(widget_type: str, config: Any, mode: str = "replay") -> ConfigError:
    with pytest.raises(ConfigError) as caught:
        parse_config(widget_type, mode, config)
    return caught.value


def test_every_type_parses_with_its_defaults() -> None:
    table = parse_config("table", "replay", {"columns": COLUMNS})
    assert isinstance(table.settings, TableConfig) and table.sync is None
    assert (table.settings.rows_path, table.settings.page_size, table.settings.sort) == ("", 25, None)
    assert table.paths == {"config.rowsPath": (), "config.columns[0].path": ("id",)}
    chart = parse_config("chart", "replay", {"chartType": "pie", "labelPath": "a.b", "series": [{"path": "n"}]})
    assert isinstance(chart.settings, ChartConfig) and chart.paths["config.labelPath"] == ("a", "b")
    metric = parse_config("metric", "replay", {"valuePath": "total", "label": "Total", "unit": "EUR"})
    assert isinstance(metric.settings, MetricConfig) and metric.settings.format == "number"
    assert isinstance(parse_config("text", "replay", {"path": "notes"}).settings, TextConfig)
    json_config = parse_config("json", "replay", {})
    assert isinstance(json_config.settings, JsonConfig) and json_config.settings.expand_depth == 2


def test_a_sync_widget_takes_wait_seconds_and_inputs() -> None:
    config = parse_config("json", "sync", {"inputs": [{"param": "q", "field": "query"}]})
    assert config.sync is not None and config.sync.wait_seconds == 10
    assert [(i.param, i.field, i.type, i.required) for i in config.sync.inputs] == [("q", "query", "string", False)]
    assert parse_config("json", "sync", {"waitSeconds": 0}).sync.wait_seconds == 0  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("widget_type", "config", "mode", "field", "words"),
    [
        ("gauge", {}, "replay", "type", "must be one of"),
        ("json", {}, "live", "mode", "must be one of"),
        ("json", [], "replay", "config", "must be a JSON object"),
        ("table", {"columns": COLUMNS, "colour": "red"}, "replay", "config.colour", "unknown key"),
        ("table", {"columns": [{"path": "id", "width": 3}]}, "replay", "config.columns[0].width", "unknown key"),
        ("table", {}, "replay", "config.columns", "is required"),
        ("table", {"columns": []}, "replay", "config.columns", "length >= 1"),
        ("table", {"columns": [{"path": "a"}] * 51}, "replay", "config.columns", "length <= 50"),
        ("table", {"columns": COLUMNS, "pageSize": 501}, "replay", "config.pageSize", "<= 500"),
        ("table", {"columns": COLUMNS, "pageSize": "10"}, "replay", "config.pageSize", "expected `int`"),
        ("table", {"columns": [{"path": "a", "format": "money"}]}, "replay", "config.columns[0].format", "enum"),
        ("table", {"columns": COLUMNS, "sort": {"column": 1}}, "replay", "config.sort.column", "no column 1"),
        (
            "table",
            {"columns": COLUMNS, "sort": {"column": 0, "direction": "up"}},
            "replay",
            "config.sort.direction",
            "",
        ),
        ("table", {"columns": [{"path": "a..b"}]}, "replay", "config.columns[0].path", "not a path"),
        ("table", {"columns": COLUMNS, "rowsPath": ".a"}, "replay", "config.rowsPath", "not a path"),
        (
            "chart",
            {"chartType": "pie", "labelPath": "x", "series": [{"path": "a"}, {"path": "b"}]},
            "replay",
            "config.series",
            "exactly 1 series, not 2",
        ),
        ("chart", {"chartType": "area", "labelPath": "x", "series": [{"path": "a"}]}, "replay", "config.chartType", ""),
        ("chart", {"chartType": "bar", "labelPath": "x", "series": []}, "replay", "config.series", "length >= 1"),
        ("chart", {"chartType": "bar", "series": [{"path": "a"}]}, "replay", "config.labelPath", "is required"),
        ("metric", {"valuePath": "v"}, "replay", "config.label", "is required"),
        ("metric", {"valuePath": "v", "label": "l", "unit": "x" * 17}, "replay", "config.unit", "length <= 16"),
        ("metric", {"valuePath": "v", "label": "l", "currency": "euro"}, "replay", "config.currency", "regex"),
        ("table", {"columns": [{"path": "a", "currency": "eu"}]}, "replay", "config.columns[0].currency", "regex"),
        ("json", {"expandDepth": 11}, "replay", "config.expandDepth", "<= 10"),
        ("text", {"path": 3}, "replay", "config.path", "expected `str`"),
        ("json", {"waitSeconds": 5}, "replay", "config.waitSeconds", "only a sync widget"),
        ("json", {"inputs": []}, "replay", "config.inputs", "only a sync widget"),
        ("json", {"waitSeconds": 30.5}, "sync", "config.waitSeconds", "<= 30"),
        ("json", {"inputs": [{"param": "a b", "field": "x"}]}, "sync", "config.inputs[0].param", "matching regex"),
        ("json", {"inputs": [{"param": "a", "field": "x", "type": "date"}]}, "sync", "config.inputs[0].type", ""),
        (
            "json",
            {"inputs": [{"param": "a", "field": "x"}, {"param": "a", "field": "y"}]},
            "sync",
            "config.inputs[1].param",
            "mapped twice",
        ),
    ],
)
def test_a_bad_config_names_the_field(widget_type: str, config: Any, mode: str, field: str, words: str) -> None:
    error = refusal(widget_type, config, mode)
    assert error.field == field, str(error)
    assert words in error.message and str(error).startswith(f"{field}: ")


def test_frame_ancestors_are_origins_or_self_and_become_the_csp() -> None:
    assert check_frame_ancestors(None) is None
    allowed = ["https://intranet.example.com", "http://localhost:8080", "https://*.example.com", "'self'"]
    assert check_frame_ancestors(allowed) == allowed
    for bad in (["https://a.test/path"], ["https://a.test; script-src *"], ["*"], ["ftp://a.test"], [3]):
        with pytest.raises(ConfigError) as caught:
            check_frame_ancestors(bad)
        assert caught.value.field == "frameAncestors[0]"
    with pytest.raises(ConfigError):
        check_frame_ancestors(["https://a.test"] * 21)
    assert embed_csp(None).endswith("; frame-ancestors *") and "default-src 'self'" in embed_csp(None)
    assert embed_csp(["https://a.test", "'self'"]).endswith("; frame-ancestors https://a.test 'self'")
    assert embed_csp([]).endswith("; frame-ancestors 'none'")
