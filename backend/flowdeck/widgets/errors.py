"""What goes wrong with a widget, always naming the field or query parameter at fault."""

from __future__ import annotations

__all__ = ("ConfigError", "InputParamError", "PathError", "WidgetError")


class WidgetError(Exception):
    source = "body"
    """Where the field is in the request (``body``, ``query``), for the 400's ``extra``."""

    def __init__(self, field: str, message: str, *, source: str | None = None) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message
        if source is not None:
            self.source = source

    def __str__(self) -> str:
        return f"{self.field}: {self.message}"


class ConfigError(WidgetError):
    """A widget's config (or name, type, frameAncestors) is invalid: a 400, nothing is stored."""


class InputParamError(WidgetError):
    """A query parameter of a sync widget is unknown, missing or cannot be converted: a 400."""

    source = "query"


class PathError(WidgetError):
    """A config path does not resolve in a run's output: the widget answers ``status: "error"``."""
