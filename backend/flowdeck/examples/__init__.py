"""Runnable example workflows, offered by the editor's empty workflow list ("start from an example").

Each example is a definition (a JSON file beside this module) and a sample input. The data-query example
reads ``data/shop.sqlite``, a small SQLite file shipped in the package: starting it makes a data source
(read-only) and a saved query in the tenant, and points the example's ``dataQuery`` node at the query.
``DATA_DIR`` is the directory SQLite data sources may always use for the examples (docs: README).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

__all__ = ("DATA_DIR", "EXAMPLES", "Example", "ExampleQuery", "example")

_HERE: Final = Path(__file__).parent
DATA_DIR: Final = _HERE / "data"
"""Where the examples' data files live (read-only; allowed for SQLite data sources by default)."""


@dataclass(frozen=True, slots=True)
class ExampleQuery:
    """The saved query (and its data source) a ``dataQuery`` node of an example runs."""

    node_id: str
    name: str
    sql: str
    parameters: tuple[str, ...]
    source_name: str
    database_file: Path

    @property
    def source_url(self) -> str:
        return f"sqlite+aiosqlite:///{self.database_file}"


@dataclass(frozen=True, slots=True)
class Example:
    id: str
    title: str
    description: str
    input: Any
    query: ExampleQuery | None = field(default=None)

    def definition(self) -> dict[str, Any]:
        """A fresh copy of the example's definition (the caller may change it)."""
        loaded: dict[str, Any] = json.loads((_HERE / f"{self.id}.json").read_text(encoding="utf-8"))
        return loaded


EXAMPLES: Final[tuple[Example, ...]] = (
    Example(
        "loop",
        "Loop over a list",
        "A loop squares each number of the input, two at a time, and collects the results.",
        {"numbers": [3, 1, 4, 1, 5]},
    ),
    Example(
        "condition-delay",
        "Branch, then wait",
        "A condition sends large amounts through a delay for a second look; small ones end at once.",
        {"amount": 250},
    ),
    Example(
        "data-query",
        "Query a SQLite file",
        "A saved query reads orders from the example shop database (shipped with Flowdeck); Python adds them up.",
        {"status": "shipped"},
        ExampleQuery(
            node_id="orders",
            name="Example: orders by status",
            sql="SELECT id, customer, total, ordered_on FROM orders WHERE status = :status ORDER BY id",
            parameters=("status",),
            source_name="Example shop (SQLite)",
            database_file=DATA_DIR / "shop.sqlite",
        ),
    ),
)


def example(example_id: str) -> Example | None:
    return next((e for e in EXAMPLES if e.id == example_id), None)
