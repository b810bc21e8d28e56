"""Errors of the data-source and saved-query API (the REST layer maps them to 4xx answers).

Running a query fails with ``flowdeck.domain.errors.NodeError`` instead: its ``retryable`` flag tells
the node's retry policy (and the REST layer) whether trying again can help.
"""

from __future__ import annotations

from collections.abc import Sequence

from flowdeck.domain.errors import ConfigIssue

__all__ = ("DataSourceInUseError", "NameTakenError", "NotFoundError", "QueryValidationError")


class QueryValidationError(ValueError):
    """What was sent cannot be saved; ``problems`` lists every issue (REST: 422 with ``extra``)."""

    def __init__(self, problems: Sequence[ConfigIssue]) -> None:
        self.problems = list(problems)
        super().__init__("; ".join(f"{p.path}: {p.message}" if p.path else p.message for p in self.problems))


class NotFoundError(LookupError):
    """No such object for this tenant (another tenant's object is not found either; REST: 404)."""

    def __init__(self, what: str, object_id: str) -> None:
        super().__init__(f"{what} {object_id} not found")
        self.what = what
        self.object_id = object_id


class NameTakenError(ValueError):
    """The tenant already has an object of this kind with this name (REST: 409)."""

    def __init__(self, what: str, name: str) -> None:
        super().__init__(f"a {what} named {name!r} already exists")
        self.name = name


class DataSourceInUseError(ValueError):
    """A data source still has saved queries, so it cannot be deleted (REST: 409)."""

    def __init__(self, source_id: str, query_names: Sequence[str]) -> None:
        shown = ", ".join(repr(n) for n in query_names[:5]) + (" ..." if len(query_names) > 5 else "")
        super().__init__(f"data source {source_id} is used by {len(query_names)} saved queries ({shown})")
        self.query_names = list(query_names)
