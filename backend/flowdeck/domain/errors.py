"""The two error shapes every layer shares: a failed node attempt and a config problem.

They live in the domain so that the sandbox, the query engine and storage can raise and report them
without importing the node handlers.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = ("ConfigIssue", "NodeError")


class NodeError(Exception):
    """A node attempt failed. ``retryable=False`` (compile errors, sandbox violations, bad config) skips retries."""

    def __init__(
        self,
        message: str,
        *,
        retryable: bool = True,
        error_type: str | None = None,
        details: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.retryable = retryable
        self.error_type = error_type or type(self).__name__
        self.details = details
        """More fields of the node's ``{"error": ...}`` output (a failed child run's ``instanceId``)."""


@dataclass(frozen=True, slots=True)
class ConfigIssue:
    """A config problem, ``path`` relative to the node (``config.branches[0].id``)."""

    path: str
    message: str
