"""Records of data sources and saved queries, as the store returns them."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Final

__all__ = ("HTTP", "KINDS", "SQL", "DataSource", "SavedQuery")

SQL: Final = "sql"
HTTP: Final = "http"
KINDS: Final = (SQL, HTTP)


@dataclass(frozen=True, slots=True)
class DataSource:
    """A data source. ``secrets_token`` is the encrypted secrets (never shown); ``secret_names`` are in clear."""

    id: str
    tenant_id: str
    name: str
    kind: str
    config: dict[str, Any]
    secret_names: tuple[str, ...]
    created_at: float
    updated_at: float
    secrets_token: str | None = field(default=None, repr=False, compare=False)


@dataclass(frozen=True, slots=True)
class SavedQuery:
    """A saved query: ``definition`` is ``{sql}`` or ``{method, path, query, body, headers}``."""

    id: str
    tenant_id: str
    name: str
    data_source_id: str
    kind: str
    parameters: tuple[str, ...]
    definition: dict[str, Any]
    created_at: float
    updated_at: float
