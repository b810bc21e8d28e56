"""How long a tenant keeps its finished runs (issue 22): by age, for production and test runs apart,
and by number. ``0`` keeps forever. The server's defaults come from the environment (settings.py); a
tenant may set its own (``/api/settings/retention``)."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ("DAY_SECONDS", "MAX_DAYS", "MAX_RUNS", "RetentionPolicy")

DAY_SECONDS = 86_400.0
MAX_DAYS = 36_500
"""The largest age a policy may name (100 years); 0 says "forever" instead."""
MAX_RUNS = 1_000_000_000


@dataclass(frozen=True, slots=True)
class RetentionPolicy:
    max_age_days: int = 30
    """Production runs finished and created more than this many days ago are deleted (0: never)."""
    test_max_age_days: int = 7
    """The same for test runs (the editor's runs of unsaved graphs)."""
    max_runs: int = 100_000
    """Finished runs beyond the tenant's newest ``max_runs`` runs are deleted (0: no limit)."""

    def production_cutoff(self, now: float) -> float | None:
        """Production runs created before this are due (``None``: kept however old)."""
        return now - self.max_age_days * DAY_SECONDS if self.max_age_days else None

    def test_cutoff(self, now: float) -> float | None:
        return now - self.test_max_age_days * DAY_SECONDS if self.test_max_age_days else None

    @property
    def keeps_everything(self) -> bool:
        return not (self.max_age_days or self.test_max_age_days or self.max_runs)
