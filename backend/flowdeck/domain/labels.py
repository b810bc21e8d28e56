"""Run labels: short ``name -> value`` strings a run carries so its history can be searched by them.

One place for the rule, used by the REST start, webhooks, the ``python`` node (which checks the same
rule inside the sandbox worker, sandbox/node_context.py) and the run list's ``label.<name>`` filters.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

__all__ = (
    "DEFAULT_LABEL_LIMITS",
    "LABEL_NAME_PATTERN",
    "LabelError",
    "LabelLimits",
    "body_path_problem",
    "label_filters",
    "labels_from_body",
)

LABEL_NAME_PATTERN: Final = r"^[A-Za-z0-9_.-]{1,64}$"
_NAME = re.compile(LABEL_NAME_PATTERN)
QUERY_PREFIX: Final = "label."
"""``?label.customer=acme``: how the run list and webhooks take labels from a query string."""


class LabelError(ValueError):
    """A label that breaks the rule; ``field`` names it (``labels.customer``)."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message


@dataclass(frozen=True, slots=True)
class LabelLimits:
    max_labels: int = 10
    """FLOWDECK_MAX_RUN_LABELS: labels one run may carry."""
    max_value_chars: int = 200
    """FLOWDECK_MAX_LABEL_CHARS: characters of one label's value."""

    def check(self, labels: Mapping[str, object], field: str = "labels", existing: int = 0) -> dict[str, str]:
        """``labels`` as checked strings, or ``LabelError`` naming the field (and the setting for a limit).

        ``existing``: labels the run already has that ``labels`` does not rename (the python node adds to them).
        """
        checked: dict[str, str] = {}
        for name, value in labels.items():
            check_name(name, field)
            if not isinstance(value, str):
                raise LabelError(f"{field}.{name}", "a label's value must be a string")
            if len(value) > self.max_value_chars:
                raise LabelError(
                    f"{field}.{name}",
                    f"a label's value is at most {self.max_value_chars} characters "
                    f"(FLOWDECK_MAX_LABEL_CHARS), got {len(value)}",
                )
            checked[name] = value
        if existing + len(checked) > self.max_labels:
            total = existing + len(checked)
            raise LabelError(
                field, f"a run carries at most {self.max_labels} labels (FLOWDECK_MAX_RUN_LABELS), got {total}"
            )
        return checked


DEFAULT_LABEL_LIMITS: Final = LabelLimits()


def check_name(name: object, field: str = "labels") -> str:
    if not isinstance(name, str) or not _NAME.match(name):
        raise LabelError(f"{field}.{name}", "a label's name is 1-64 characters of A-Z a-z 0-9 _ . -")
    return name


def label_filters(query: Mapping[str, str], limits: LabelLimits) -> dict[str, str]:
    """The ``label.<name>=<value>`` pairs of a query string, checked (``LabelError`` naming the parameter)."""
    found = {key[len(QUERY_PREFIX) :]: value for key, value in query.items() if key.startswith(QUERY_PREFIX)}
    return limits.check(found, field="label")


BODY_PATH_PATTERN: Final = r"^[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+){0,15}$"
_BODY_PATH = re.compile(BODY_PATH_PATTERN)


def body_path_problem(path: object) -> str | None:
    """Why ``path`` is not a body path (``customer.id``, ``items.0.sku``: dotted keys or list indexes), or ``None``."""
    if not isinstance(path, str) or not _BODY_PATH.match(path):
        return "a dotted path into the JSON body, like customer.id or items.0.sku (at most 16 parts)"
    return None


def labels_from_body(paths: Mapping[str, str], body: Any) -> dict[str, str]:
    """``options.webhookLabels``: each label's value read from the webhook's JSON body at its path.

    A path the body does not have (or whose value is ``null``) gives no label: callers send optional fields.
    A string, number or boolean becomes the label's text; an object or a list is a ``LabelError`` naming the
    path, since a label is one searchable value.
    """
    found: dict[str, str] = {}
    for name, path in paths.items():
        value = _at_path(body, path)
        if value is None:
            continue
        if isinstance(value, bool):
            found[name] = "true" if value else "false"
        elif isinstance(value, str | int | float):
            found[name] = str(value)
        else:
            kind = "an object" if isinstance(value, dict) else "a list"
            raise LabelError(f"body.{path}", f"options.webhookLabels.{name} reads {kind}; a label needs one value")
    return found


def _at_path(body: Any, path: str) -> Any:
    value = body
    for part in path.split("."):
        if isinstance(value, dict):
            value = value.get(part)
        elif isinstance(value, list) and part.isdigit() and int(part) < len(value):
            value = value[int(part)]
        else:
            return None
    return value
