"""A claim that loses its database connection (PostgreSQL restarting) is a warning, not an error with a
traceback, and the worker goes on claiming once the database answers again."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from flowdeck.engine.engine import Engine
from tests.support.graphs import linear
from tests.support.runs import start


async def test_a_claim_that_lost_its_connection_is_a_warning_and_the_run_goes_on(
    engine: Engine, tenant_id: str, caplog: pytest.LogCaptureFixture
) -> None:
    claim = engine.state.claim_jobs
    lost: list[int] = []

    async def claim_losing_the_first(*args: Any, **kwargs: Any) -> Any:
        if not lost:
            lost.append(1)
            raise ConnectionResetError("connection reset by peer")
        return await claim(*args, **kwargs)

    engine.state.claim_jobs = claim_losing_the_first  # type: ignore[method-assign]
    engine.orchestrator.start_taker = None  # the run's start node is queued, as one another process started
    with caplog.at_level(logging.WARNING, logger="flowdeck.engine.worker"):
        run_id = await start(engine, tenant_id, linear(3))
        run = await engine.wait_for_run(run_id, 20)

    assert run.status.value == "COMPLETED"
    assert lost
    records = [(r.levelname, r.getMessage(), r.exc_info is None) for r in caplog.records]
    assert records == [
        (
            "WARNING",
            "claiming jobs lost the database connection (connection reset by peer); retrying after the poll interval",
            True,
        )
    ]
