"""The form of a ``wait`` node with ``resumeOn: "form"``: its ``fields`` checked on save, a submission typed.

A field is ``{name, label?, type: string|number|boolean|select, required?, options?}``. A submission
arrives as JSON (values typed already) or as an HTML form post (every value a string; an unchecked box
is absent). Either way the node's output is one value per field: a string, a number, a boolean, or one
of a select's options; an optional field left empty is ``null`` (a boolean: ``false``).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from flowdeck.domain.errors import ConfigIssue

__all__ = ("FIELD_TYPES", "FormError", "FormField", "field_issues", "parse_fields", "typed_values")

FIELD_TYPES: Final = ("string", "number", "boolean", "select")
MAX_FIELDS: Final = 50
_NAME: Final = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,63}")
_TRUE: Final = frozenset({"on", "true", "1", "yes"})
_FALSE: Final = frozenset({"", "off", "false", "0", "no"})


@dataclass(frozen=True, slots=True)
class FormField:
    name: str
    label: str
    type: str
    required: bool
    options: tuple[str, ...]


class FormError(ValueError):
    """A submission that does not fit the form; ``field`` names the field."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field
        self.message = message


def field_issues(raw: Any) -> list[ConfigIssue]:
    """Everything wrong with ``config.fields``, each issue naming ``config.fields[i].key``."""
    if not isinstance(raw, list):
        return [ConfigIssue("config.fields", "fields must be a list of {name, label, type, required, options?}")]
    if len(raw) > MAX_FIELDS:
        return [ConfigIssue("config.fields", f"a form has at most {MAX_FIELDS} fields")]
    issues: list[ConfigIssue] = []
    seen: set[str] = set()
    for i, field in enumerate(raw):
        at = f"config.fields[{i}]"
        if not isinstance(field, dict):
            issues.append(ConfigIssue(at, "a field must be an object {name, label, type, required, options?}"))
        else:
            issues += _one_field_issues(field, at, seen)
    return issues


def _one_field_issues(field: dict[str, Any], at: str, seen: set[str]) -> list[ConfigIssue]:
    issues: list[ConfigIssue] = []
    name = field.get("name")
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        issues.append(ConfigIssue(f"{at}.name", "name must be a letter or _ then letters, digits, _ (≤ 64)"))
    elif name in seen:
        issues.append(ConfigIssue(f"{at}.name", f"a second field is named '{name}'"))
    else:
        seen.add(name)
    if "label" in field and not isinstance(field["label"], str):
        issues.append(ConfigIssue(f"{at}.label", "label must be a string"))
    kind = field.get("type")
    if kind not in FIELD_TYPES:
        issues.append(ConfigIssue(f"{at}.type", f"type must be one of {', '.join(FIELD_TYPES)}"))
    if "required" in field and not isinstance(field["required"], bool):
        issues.append(ConfigIssue(f"{at}.required", "required must be true or false"))
    options = field.get("options")
    if kind == "select":
        if not isinstance(options, list) or not options or not all(isinstance(o, str) and o for o in options):
            issues.append(ConfigIssue(f"{at}.options", "a select field needs options: a list of non-empty strings"))
    elif options is not None:
        issues.append(ConfigIssue(f"{at}.options", "options are for select fields only"))
    return issues


def parse_fields(raw: Any) -> list[FormField]:
    """The fields of a config that passed ``field_issues``."""
    return [
        FormField(
            name=f["name"],
            label=f.get("label") or f["name"],
            type=f["type"],
            required=bool(f.get("required", False)),
            options=tuple(f.get("options") or ()),
        )
        for f in raw or []
    ]


def typed_values(fields: list[FormField], values: Mapping[str, Any], *, from_html: bool) -> dict[str, Any]:
    """The submitted values, typed, one per field; raises ``FormError`` naming the first bad field."""
    known = {f.name for f in fields}
    for name in values:
        if name not in known:
            raise FormError(name, f"'{name}' is not a field of this form")
    return {f.name: _typed(f, values.get(f.name), from_html) for f in fields}


def _typed(field: FormField, value: Any, from_html: bool) -> Any:
    name = field.name
    if field.type == "boolean":
        return _boolean(field, value, from_html)
    if value is None or (isinstance(value, str) and not value.strip() and (from_html or field.type != "string")):
        if field.required:
            raise FormError(name, f"'{name}' is required")
        return None
    if field.type == "number":
        return _number(name, value, from_html)
    if not isinstance(value, str):
        raise FormError(name, f"'{name}' must be a string")
    if field.required and not value.strip():
        raise FormError(name, f"'{name}' is required")
    if field.type == "select" and value not in field.options:
        raise FormError(name, f"'{name}' must be one of: {', '.join(field.options)}")
    return value


def _boolean(field: FormField, value: Any, from_html: bool) -> bool:
    if from_html and isinstance(value, str) and value.strip().lower() in _TRUE | _FALSE:
        value = value.strip().lower() in _TRUE
    if value is None:
        value = False
    if not isinstance(value, bool):
        raise FormError(field.name, f"'{field.name}' must be true or false")
    if field.required and not value:
        raise FormError(field.name, f"'{field.name}' is required (it must be checked)")
    return value


def _number(name: str, value: Any, from_html: bool) -> int | float:
    if from_html and isinstance(value, str):
        try:
            value = int(value.strip())
        except ValueError:
            try:
                value = float(value.strip())
            except ValueError:
                raise FormError(name, f"'{name}' must be a number, got {value!r}") from None
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise FormError(name, f"'{name}' must be a number")
    return value
