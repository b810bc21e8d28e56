"""A worker's stop ends its background loops even when one lost its cancellation (Python 3.11's ``wait_for``
loses one that arrives as the call it awaits ends, engine/task_stop.py): the lease renewal, which keeps
renewing while nodes drain, went back to renewing and the stop waited for it for ever."""

from __future__ import annotations

import asyncio

from flowdeck.engine.engine import Engine
from flowdeck.storage.database import Database
from tests.support.handlers import make_test_registry


async def test_stop_ends_a_lease_renewal_that_lost_its_cancellation(db: Database) -> None:
    engine = Engine(db, make_test_registry(), lease_seconds=0.3, poll_interval=0.05)
    renewing, swallowed = asyncio.Event(), list[bool]()

    async def renewal_waiting_on_the_database() -> None:
        renewing.set()
        try:
            await asyncio.Event().wait()  # the database does not answer yet
        except asyncio.CancelledError:
            if swallowed:
                raise
            swallowed.append(True)  # lost

    engine.worker.heartbeat = renewal_waiting_on_the_database  # type: ignore[method-assign]
    await engine.start()
    try:
        await asyncio.wait_for(renewing.wait(), timeout=10)
    finally:
        await asyncio.wait_for(engine.stop(), timeout=10)
    assert swallowed == [True]
