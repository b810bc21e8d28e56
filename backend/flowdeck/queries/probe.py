"""Test a data source's connection: one trivial request through the query engine's guarded path.

The probe is a saved query the user never sees (``SELECT 1``, or ``GET`` of the base URL) run by
``QueryEngine.run``, so every check a real query meets (allowed SQLite files, address rules, time
limits) applies to the test too. The answer is ``{ok, message, latencyMs}``; a failure is an answer
(``ok: false`` with the reason), not an error.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any, Final

from flowdeck.handlers.base import NodeError
from flowdeck.queries.engine import QueryEngine
from flowdeck.queries.models import SQL, DataSource, SavedQuery

__all__ = ("PROBE_TIMEOUT_SECONDS", "probe")

PROBE_TIMEOUT_SECONDS: Final = 10.0


def _probe_query(source: DataSource) -> SavedQuery:
    definition: dict[str, Any] = (
        {"sql": "SELECT 1"}
        if source.kind == SQL
        else {"method": "GET", "path": "", "query": {}, "body": None, "headers": {}}
    )
    return SavedQuery(
        "connection-test", source.tenant_id, "connection test", source.id, source.kind, (), definition, 0.0, 0.0
    )


async def probe(engine: QueryEngine, source: DataSource, secrets: Mapping[str, str]) -> dict[str, Any]:
    """Connect to ``source`` and answer ``{ok, message, latencyMs}``."""
    started = time.perf_counter()
    try:
        result = await engine.run(source, secrets, _probe_query(source), {}, timeout=PROBE_TIMEOUT_SECONDS, row_limit=1)
    except NodeError as exc:
        ok, message = False, exc.message
    else:
        ok = True
        message = "connected" if source.kind == SQL else f"the server answered HTTP {result.get('status')}"
    return {"ok": ok, "message": message, "latencyMs": round((time.perf_counter() - started) * 1000, 1)}
