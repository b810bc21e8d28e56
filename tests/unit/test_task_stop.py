"""A component's stop ends its background tasks even when one lost a cancellation (Python 3.11's ``wait_for`` can
lose one) and went back to waiting: it is cancelled again."""

from __future__ import annotations

import asyncio

from flowdeck.engine.task_stop import cancel_and_wait


async def test_a_task_that_lost_its_first_cancellation_is_cancelled_again() -> None:
    waiting, lost = asyncio.Event(), []

    async def forwarder() -> None:
        while True:
            try:
                waiting.set()
                await asyncio.Event().wait()  # its next message, which never comes
            except asyncio.CancelledError:
                if lost:
                    raise
                lost.append(True)  # lost, as wait_for loses it when the awaited call completes at that moment

    task = asyncio.create_task(forwarder())
    await waiting.wait()
    await asyncio.wait_for(cancel_and_wait([task]), 5)
    assert task.cancelled() and lost == [True]


async def test_ended_and_failed_tasks_are_left_as_they_are_and_their_errors_retrieved() -> None:
    async def fails() -> None:
        raise RuntimeError("boom")

    failed = asyncio.create_task(fails())
    await asyncio.wait([failed])
    await cancel_and_wait([failed])
    assert isinstance(failed.exception(), RuntimeError)
