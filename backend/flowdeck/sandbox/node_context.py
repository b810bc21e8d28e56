"""The ``ctx`` a ``python`` node's code receives: the run's context as a dict, plus ``ctx.label(name, value)``.

Labels set here travel back with the result (``RunSuccess.labels``) and are stored with the node's
completion (engine/decision.py); the rule is domain/labels.py's, checked at the call so the error names
the user's line.
"""

from __future__ import annotations

from typing import Any

from flowdeck.domain.labels import LabelLimits

__all__ = ("NodeContext",)


class NodeContext(dict[str, Any]):
    """A plain dict to user code (reads, writes, ``json``), with one method for labels."""

    __slots__ = ("_labels", "_limits")

    def __init__(self, values: dict[str, Any], limits: LabelLimits) -> None:
        super().__init__(values)
        self._limits = limits
        self._labels: dict[str, str] = {}

    def label(self, name: str, value: str) -> None:
        """Attach the label ``name = value`` to this run (a name set again takes the new value)."""
        merged = {**self._labels, name: value}
        self._labels = self._limits.check(merged, field="ctx.label")

    @property
    def labels(self) -> dict[str, str]:
        return dict(self._labels)
