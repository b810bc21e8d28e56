"""What the engine reports about its own work (metrics hang here), without knowing who listens."""

from __future__ import annotations

from typing import Protocol

__all__ = ("EngineObserver", "NullObserver")


class EngineObserver(Protocol):
    def run_started(self, trigger: str) -> None:
        """A run was created in this process (``trigger``: api, test, webhook, schedule, widget …)."""

    def node_ran(self, node_type: str, seconds: float, outcome: str) -> None:
        """One attempt of a node ran in this process (``outcome``: completed or failed)."""

    def run_refused(self, reason: str, trigger: str) -> None:
        """A start was refused in this process (``reason``: the budget, e.g. ``tenant_active_runs``)."""


class NullObserver:
    def run_started(self, trigger: str) -> None:
        pass

    def node_ran(self, node_type: str, seconds: float, outcome: str) -> None:
        pass

    def run_refused(self, reason: str, trigger: str) -> None:
        pass
