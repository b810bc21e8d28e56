"""Group commit across runs for chain steps (issue 15): the steps of different runs ready at the same
moment are taken together, by one statement on PostgreSQL (storage/chain_batches.py) and by one write
transaction on SQLite (storage/state_sqlite.py).

A step that arrives while no batch is in flight is sent at once by its own task (a lone run waits for
nothing), and the steps that arrive while a batch is in flight wait for it and go together in the next
(the busier the database, the larger the batches). A batch holds at most one step per run (the
orchestrator serialises a run's decisions in a process anyway) and at most ``BATCH_LIMIT``. The store's
``send`` takes a batch as a set: each step's compare-and-swap decides for its own run only, and a step
that writes nothing comes back with no status (the general decision then takes it).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from typing import Final

from flowdeck.storage.steps import ChainStep, ChainStepInput

__all__ = ("BATCH_LIMIT", "ChainStepBatcher", "SendSteps")

BATCH_LIMIT: Final = 200

SendSteps = Callable[[list[ChainStepInput]], Awaitable[list[ChainStep]]]
"""Takes a batch's steps, one result per step in their order."""

_Pending = tuple[ChainStepInput, "asyncio.Future[ChainStep]"]


class ChainStepBatcher:
    def __init__(self, send: SendSteps) -> None:
        self._send = send
        self._queue: list[_Pending] = []
        self._sending = False
        self._task: asyncio.Task[None] | None = None
        self.largest = 0
        """The most steps one batch took so far (tests and the benchmark look)."""

    @property
    def queued(self) -> int:
        """Steps waiting for the next batch."""
        return len(self._queue)

    async def submit(self, step: ChainStepInput) -> ChainStep:
        future: asyncio.Future[ChainStep] = asyncio.get_running_loop().create_future()
        self._queue.append((step, future))
        if self._sending:  # a batch is in flight: this step goes in the next one
            return await future
        self._sending = True  # nothing in flight: this step goes at once, with whatever joined this turn
        try:
            await self._send_batch()
        finally:
            if self._queue:  # arrived while it was in flight: the next batch, from a task of its own
                self._start()
            else:
                self._sending = False
        return await future

    def _start(self) -> None:
        task = asyncio.get_running_loop().create_task(self._send_all(), name="flowdeck-chain-steps")
        task.add_done_callback(_retrieve)
        self._task = task

    async def close(self) -> None:
        """Wait for the batch in flight (its connection goes back to the pool before the pool closes)."""
        task = self._task
        if task is not None and not task.done():
            with contextlib.suppress(BaseException):
                await asyncio.shield(task)

    async def _send_all(self) -> None:
        try:
            while self._queue:
                await self._send_batch()
        finally:
            self._sending = False
            if self._queue:  # arrived while the last batch failed hard (cancelled): start again
                self._sending = True
                asyncio.get_running_loop().call_soon(self._start)

    async def _send_batch(self) -> None:
        """Send the next batch and settle its steps' futures (an error goes to every step of the batch)."""
        batch, self._queue = _one_per_run(self._queue)
        self.largest = max(self.largest, len(batch))
        try:
            results = await self._send([step for step, _ in batch])
        except BaseException as exc:
            for _, future in batch:
                if not future.done():
                    future.set_exception(exc)
                    future.exception()  # a cancelled submitter no longer reads it
            if not isinstance(exc, Exception):
                raise
            return
        for (_, future), result in zip(batch, results, strict=True):
            if not future.done():
                future.set_result(result)


def _one_per_run(queue: list[_Pending]) -> tuple[list[_Pending], list[_Pending]]:
    """The next batch (at most one step per run, at most ``BATCH_LIMIT``) and what waits for the one after."""
    batch: list[_Pending] = []
    later: list[_Pending] = []
    runs: set[str] = set()
    for pending in queue:
        run = pending[0].job.instance_id
        if run in runs or len(batch) >= BATCH_LIMIT:
            later.append(pending)
        else:
            runs.add(run)
            batch.append(pending)
    return batch, later


def _retrieve(task: asyncio.Task[None]) -> None:
    with contextlib.suppress(asyncio.CancelledError):
        task.exception()
