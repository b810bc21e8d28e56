"""How many runs a public sync-widget link may start: ``runsPerMinute`` of the widget (default 10) per embed token.

Counted in the database (``storage/rate_counters.py``: one atomic upsert per run), so several API processes
share one budget and parallel requests cannot overshoot it. Over it, a 429 with ``Retry-After``; the
signed-in ``GET /api/widgets/{id}/data`` is not limited by it.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Final

from flowdeck.accounts.rate_limit import RateLimitedError
from flowdeck.api.services.widget_data import Admit
from flowdeck.storage.database import Database
from flowdeck.storage.rate_counters import RateCounters
from flowdeck.widgets.config import SyncOptions

__all__ = ("EmbedRunLimiter",)

WINDOW_SECONDS: Final = 60.0


class EmbedRunLimiter:
    def __init__(self, db: Database, clock: Callable[[], float] = time.time) -> None:
        self.counters = RateCounters(db)
        self.clock = clock

    def admit(self, token_id: str) -> Admit:
        """The check ``WidgetDataService.of_widget`` makes before a run of this embed token starts."""

        async def count_run(sync: SyncOptions) -> None:
            now, key = self.clock(), f"embed-runs:{token_id}"
            count = (await self.counters.hit({key: WINDOW_SECONDS}, now))[key]
            if count.count > sync.runs_per_minute:
                await self.counters.prune(now)
                raise RateLimitedError(
                    min(count.resets_at - now, WINDOW_SECONDS),  # a parallel request's clock may read earlier
                    f"this widget link may start {sync.runs_per_minute} runs a minute (config.runsPerMinute)",
                )

        return count_run
