"""A run's output -> the ``data`` of each widget type (docs/widgets.md, "The data answer").

A path that is missing, or reaches a value of the wrong type, raises ``PathError`` naming the config field;
the caller answers ``status: "error"`` with it, never an empty widget.
"""

from __future__ import annotations

from typing import Any, Final

from flowdeck.widgets.config import ChartConfig, JsonConfig, MetricConfig, TableConfig, TextConfig, WidgetConfig
from flowdeck.widgets.errors import PathError
from flowdeck.widgets.markdown import render_markdown
from flowdeck.widgets.paths import Path, describe, resolve

__all__ = ("MAX_ROWS", "widget_data")

MAX_ROWS: Final = 10_000
_NUMERIC_FORMATS: Final = frozenset({"number", "percent", "currency"})
_TIME_FORMATS: Final = frozenset({"date", "datetime"})


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _wrong_type(field: str, path: Path, value: Any, expected: str, where: str = " in the output") -> PathError:
    return PathError(field, f'"{".".join(path)}" is {describe(value)}{where}, expected {expected}')


def _rows(config: WidgetConfig, output: Any) -> list[dict[str, Any]]:
    path = config.paths["config.rowsPath"]
    rows = resolve(output, path, "config.rowsPath")
    if not isinstance(rows, list):
        raise _wrong_type("config.rowsPath", path, rows, "a list of objects")
    for index, row in enumerate(rows):
        if not isinstance(row, dict):
            raise PathError("config.rowsPath", f"row {index} is {describe(row)}, expected an object")
    return rows


def _cell(row: dict[str, Any], path: Path, field: str, index: int, fmt: str) -> Any:
    where = f" in row {index}"
    value = resolve(row, path, field, where)
    if value is None or fmt == "text":
        return value
    if fmt in _NUMERIC_FORMATS and not _is_number(value):
        raise _wrong_type(field, path, value, f"a number (format {fmt})", where)
    if fmt in _TIME_FORMATS and not (_is_number(value) or isinstance(value, str)):
        raise _wrong_type(field, path, value, f"a date string or epoch seconds (format {fmt})", where)
    return value


def _table(config: WidgetConfig, settings: TableConfig, output: Any) -> dict[str, Any]:
    rows = _rows(config, output)
    columns = [
        (f"c{i}", config.paths[f"config.columns[{i}].path"], f"config.columns[{i}].path", c.format)
        for i, c in enumerate(settings.columns)
    ]
    shown = rows[:MAX_ROWS]
    cells = [
        {key: _cell(row, path, field, index, fmt) for key, path, field, fmt in columns}
        for index, row in enumerate(shown)
    ]
    sort = settings.sort
    return {
        "columns": [
            {"key": f"c{i}", "label": c.label or c.path, "format": c.format, "currency": c.currency}
            for i, c in enumerate(settings.columns)
        ],
        "rows": cells,
        "total": len(rows),
        "pageSize": settings.page_size,
        "sort": None if sort is None else {"column": sort.column, "direction": sort.direction},
        "truncated": len(rows) > len(shown),
    }


def _chart(config: WidgetConfig, settings: ChartConfig, output: Any) -> dict[str, Any]:
    rows = _rows(config, output)[:MAX_ROWS]
    label_path = config.paths["config.labelPath"]
    labels = []
    for index, row in enumerate(rows):
        label = resolve(row, label_path, "config.labelPath", f" in row {index}")
        if not (isinstance(label, str) or _is_number(label) or label is None):
            raise _wrong_type("config.labelPath", label_path, label, "a string or a number", f" in row {index}")
        labels.append(label)
    series = []
    for i, spec in enumerate(settings.series):
        field, path = f"config.series[{i}].path", config.paths[f"config.series[{i}].path"]
        values = []
        for index, row in enumerate(rows):
            value = resolve(row, path, field, f" in row {index}")
            if value is not None and not _is_number(value):
                raise _wrong_type(field, path, value, "a number", f" in row {index}")
            values.append(value)
        series.append({"label": spec.path if spec.label is None else spec.label, "values": values})
    return {"chartType": settings.chart_type, "labels": labels, "series": series}


def _previous_value(path: Path, previous_output: Any) -> float | None:
    try:
        value = resolve(previous_output, path, "config.valuePath")
    except PathError:
        return None  # an older run shaped otherwise has no comparable value
    return value if _is_number(value) else None


def _metric(config: WidgetConfig, settings: MetricConfig, output: Any, previous_output: Any) -> dict[str, Any]:
    path = config.paths["config.valuePath"]
    value = resolve(output, path, "config.valuePath")
    if not _is_number(value):
        raise _wrong_type("config.valuePath", path, value, "a number")
    previous = None if previous_output is None else _previous_value(path, previous_output)
    change = None if previous is None else value - previous
    percent = None if change is None or not previous else change / abs(previous) * 100
    return {
        "label": settings.label,
        "value": value,
        "format": settings.format,
        "currency": settings.currency,
        "unit": settings.unit,
        "previous": previous,
        "change": change,
        "changePercent": percent,
    }


def _text(config: WidgetConfig, output: Any) -> dict[str, Any]:
    path = config.paths["config.path"]
    value = resolve(output, path, "config.path")
    if not isinstance(value, str):
        raise _wrong_type("config.path", path, value, "a string of Markdown")
    return {"html": render_markdown(value)}


def widget_data(config: WidgetConfig, output: Any, previous_output: Any = None) -> dict[str, Any]:
    """The widget's ``data`` for a run's ``output`` (``previous_output``: the run a metric compares with)."""
    settings = config.settings
    if isinstance(settings, TableConfig):
        return _table(config, settings, output)
    if isinstance(settings, ChartConfig):
        return _chart(config, settings, output)
    if isinstance(settings, MetricConfig):
        return _metric(config, settings, output, previous_output)
    if isinstance(settings, TextConfig):
        return _text(config, output)
    assert isinstance(settings, JsonConfig)
    return {"value": resolve(output, config.paths["config.path"], "config.path"), "expandDepth": settings.expand_depth}
