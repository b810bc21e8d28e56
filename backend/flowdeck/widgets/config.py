"""Widget configs by type (docs/widgets.md), checked once: unknown keys, wrong types and bad paths are refused.

Every error names the field (``config.columns[1].path``); the stored config stays the JSON the client sent.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Annotated, Any, Final, Literal, cast

import msgspec
from msgspec import UNSET, Meta, UnsetType

from flowdeck.widgets.errors import ConfigError
from flowdeck.widgets.paths import Path, parse_path

__all__ = (
    "FORMATS",
    "MODES",
    "TYPES",
    "ChartConfig",
    "InputSpec",
    "JsonConfig",
    "MetricConfig",
    "SyncOptions",
    "TableConfig",
    "TextConfig",
    "TypeConfig",
    "WidgetConfig",
    "WidgetType",
    "parse_config",
)

WidgetType = Literal["table", "chart", "metric", "text", "json"]
Mode = Literal["replay", "sync"]
Format = Literal["text", "number", "percent", "currency", "date", "datetime"]
TYPES: Final = ("table", "chart", "metric", "text", "json")
MODES: Final = ("replay", "sync")
FORMATS: Final = ("text", "number", "percent", "currency", "date", "datetime")

PathText = Annotated[str, Meta(max_length=500)]
Label = Annotated[str, Meta(max_length=200)]
Currency = Annotated[str, Meta(pattern=r"^[A-Z]{3}$", description="an ISO 4217 code (EUR, GBP, JPY); default USD")]
"""The currency a ``currency`` value is shown in."""


class _Config(msgspec.Struct, rename="camel", forbid_unknown_fields=True):
    pass


class Column(_Config):
    path: PathText
    label: Label | None = None
    format: Format = "text"
    currency: Currency | None = None


class Sort(_Config):
    column: Annotated[int, Meta(ge=0)]
    direction: Literal["asc", "desc"] = "asc"


class TableConfig(_Config):
    columns: Annotated[list[Column], Meta(min_length=1, max_length=50)]
    rows_path: PathText = ""
    page_size: Annotated[int, Meta(ge=1, le=500)] = 25
    sort: Sort | None = None


class Series(_Config):
    path: PathText
    label: Label | None = None


class ChartConfig(_Config):
    chart_type: Literal["bar", "line", "pie"]
    label_path: PathText
    series: Annotated[list[Series], Meta(min_length=1, max_length=10)]
    rows_path: PathText = ""


class MetricConfig(_Config):
    value_path: PathText
    label: Label
    format: Format = "number"
    unit: Annotated[str, Meta(max_length=16)] | None = None
    currency: Currency | None = None


class TextConfig(_Config):
    path: PathText = ""


class JsonConfig(_Config):
    path: PathText = ""
    expand_depth: Annotated[int, Meta(ge=0, le=10)] = 2


class InputSpec(_Config):
    param: Annotated[str, Meta(pattern=r"^[A-Za-z0-9_.-]{1,64}$")]
    field: Annotated[str, Meta(min_length=1, max_length=200, pattern=r"^[^\x00]*$")]
    type: Literal["string", "number", "boolean", "json"] = "string"
    required: bool = False
    default: Any | UnsetType = UNSET


class SyncOptions(_Config):
    wait_seconds: Annotated[float, Meta(ge=0, le=30)] = 10
    inputs: Annotated[list[InputSpec], Meta(max_length=50)] = []
    runs_per_minute: Annotated[int, Meta(ge=1, le=10_000)] = 10
    """Runs one embed token may start in a minute (a public link); over it, a 429 with ``Retry-After``."""


TypeConfig = TableConfig | ChartConfig | MetricConfig | TextConfig | JsonConfig
_BY_TYPE: Final[dict[str, type[TypeConfig]]] = {
    "table": TableConfig,
    "chart": ChartConfig,
    "metric": MetricConfig,
    "text": TextConfig,
    "json": JsonConfig,
}
_SYNC_KEYS: Final = ("waitSeconds", "inputs", "runsPerMinute")


@dataclass(frozen=True, slots=True)
class WidgetConfig:
    """A checked config: the type's settings, its paths parsed, and the sync options of a sync widget."""

    type: WidgetType
    settings: TypeConfig
    paths: dict[str, Path]
    """Config field (``config.columns[0].path``) -> parsed path."""
    sync: SyncOptions | None


_AT: Final = re.compile(r"^(?P<message>.*?)(?: - at `\$(?P<where>[^`]*)`)?$", re.DOTALL)
_NAMED: Final = re.compile(r"^Object (?P<what>contains unknown|missing required) field `(?P<key>[^`]+)`$")


def _config_error(exc: msgspec.ValidationError) -> ConfigError:
    """msgspec's ``Expected `int`, got `str` - at `$.pageSize``` as ``config.pageSize: expected `int`, got `str```."""
    match = _AT.match(str(exc))
    message, where = (match["message"], match["where"] or "") if match else (str(exc), "")
    field = "config" + where
    named = _NAMED.match(message)
    if named:
        field = f"{field}.{named['key']}"
        message = "unknown key" if named["what"] == "contains unknown" else "is required"
    return ConfigError(field, message[:1].lower() + message[1:])


def _paths(settings: TypeConfig) -> dict[str, str]:
    if isinstance(settings, TableConfig):
        paths = {"config.rowsPath": settings.rows_path}
        paths.update({f"config.columns[{i}].path": c.path for i, c in enumerate(settings.columns)})
        return paths
    if isinstance(settings, ChartConfig):
        paths = {"config.rowsPath": settings.rows_path, "config.labelPath": settings.label_path}
        paths.update({f"config.series[{i}].path": s.path for i, s in enumerate(settings.series)})
        return paths
    if isinstance(settings, MetricConfig):
        return {"config.valuePath": settings.value_path}
    return {"config.path": settings.path}


def _check_rules(settings: TypeConfig, sync: SyncOptions | None) -> None:
    """What the types alone cannot say."""
    sort = settings.sort if isinstance(settings, TableConfig) else None
    if isinstance(settings, TableConfig) and sort is not None and sort.column >= len(settings.columns):
        raise ConfigError("config.sort.column", f"there is no column {sort.column}")
    if isinstance(settings, ChartConfig) and settings.chart_type == "pie" and len(settings.series) != 1:
        raise ConfigError("config.series", f"a pie chart takes exactly 1 series, not {len(settings.series)}")
    if sync is not None:
        seen: set[str] = set()
        for i, spec in enumerate(sync.inputs):
            if spec.param in seen:
                raise ConfigError(f"config.inputs[{i}].param", f'"{spec.param}" is mapped twice')
            seen.add(spec.param)


def parse_config(widget_type: str, mode: str, raw: Any) -> WidgetConfig:
    """Check a widget's config for its type and mode; a ``ConfigError`` names the first field at fault."""
    if widget_type not in _BY_TYPE:
        raise ConfigError("type", f"must be one of {', '.join(TYPES)}, not {widget_type!r}")
    if mode not in MODES:
        raise ConfigError("mode", f"must be one of {', '.join(MODES)}, not {mode!r}")
    if not isinstance(raw, dict):
        raise ConfigError("config", "must be a JSON object")
    own = dict(raw)
    sync_raw = {key: own.pop(key) for key in _SYNC_KEYS if key in own}
    if mode == "replay" and sync_raw:
        raise ConfigError(f"config.{next(iter(sync_raw))}", "only a sync widget takes it")
    try:
        settings = msgspec.convert(own, _BY_TYPE[widget_type])
        sync = msgspec.convert(sync_raw, SyncOptions) if mode == "sync" else None
    except msgspec.ValidationError as exc:
        raise _config_error(exc) from exc
    _check_rules(settings, sync)
    paths = {field: parse_path(text, field) for field, text in _paths(settings).items()}
    return WidgetConfig(cast(WidgetType, widget_type), settings, paths, sync)
