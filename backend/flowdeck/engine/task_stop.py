"""Stopping a component's background tasks, whatever they do with a cancellation.

On Python 3.11 ``asyncio.wait_for`` loses a cancellation that arrives as the call it awaits completes
(gh-86296, fixed in 3.12): the task goes on as if never cancelled. A forwarding loop that lost one goes back to
waiting for its next message, and a stop that cancelled it once and waits for it waits forever (the fan-out's
stop did, about once in ten runs of tests/integration/test_fanout.py on Redis). So the tasks are cancelled
again until they have ended.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from typing import Any

__all__ = ("cancel_and_wait",)


async def cancel_and_wait(tasks: Iterable[asyncio.Task[Any]], *, every: float = 0.1) -> None:
    """Cancel ``tasks`` and return once each has ended, cancelling again every ``every`` seconds those that have
    not. Their exceptions are retrieved (never reported as unretrieved); none is raised."""
    tasks = list(tasks)
    pending = {task for task in tasks if not task.done()}
    while pending:
        for task in pending:
            task.cancel()
        _, pending = await asyncio.wait(pending, timeout=every)
    for task in tasks:
        if not task.cancelled():
            task.exception()
