"""Batching of deliveries: results of one run that arrive while a decision of it is being taken wait
for it and are then decided together, in one transaction (one compare-and-swap, one commit), each as
it would be alone and in arrival order. The branches of a fan-out finishing at once cost one commit,
not one each.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from flowdeck.engine.outcomes import NodeOutcome
from flowdeck.storage.records import Job

__all__ = ("Batcher", "Delivery")

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Delivery:
    """A node attempt's result waiting for its run's decision."""

    job: Job
    outcome: NodeOutcome
    claim_for: str | None
    early_release: bool
    """The caller goes on before the decision is durable (storage/database.py)."""
    done: asyncio.Future[Job | None]

    @staticmethod
    def of(job: Job, outcome: NodeOutcome, claim_for: str | None, early_release: bool) -> Delivery:
        done = asyncio.get_running_loop().create_future()
        return Delivery(job, outcome, claim_for, early_release, done)


class _LeaderGoneError(Exception):
    """The task deciding a batch was cancelled before it reached this delivery."""


class Batcher:
    def __init__(
        self,
        decide_alone: Callable[[Delivery], Awaitable[Job | None]],
        decide_together: Callable[[list[Delivery]], Awaitable[list[Job | None]]],
    ) -> None:
        self._decide_alone = decide_alone
        self._decide_together = decide_together
        self._deliveries: dict[str, list[Delivery]] = {}
        """Per run: results waiting while one of its decisions is being taken."""

    async def deliver(self, delivery: Delivery) -> Job | None:
        """Decide ``delivery`` with the others of its run that arrive meanwhile; returns its result."""
        instance_id = delivery.job.instance_id
        queue = self._deliveries.get(instance_id)
        if queue is not None:  # a decision of this run is under way: join the next batch
            queue.append(delivery)
            try:
                return await delivery.done
            except _LeaderGoneError:
                fresh = asyncio.get_running_loop().create_future()
                return await self.deliver(dataclasses.replace(delivery, done=fresh))
        queue = self._deliveries[instance_id] = [delivery]
        try:
            while queue:
                batch = list(queue)
                await self._decide_batch(batch)
                del queue[: len(batch)]
        finally:
            del self._deliveries[instance_id]
            for left in queue:  # this task was cancelled mid-way: the others decide for themselves
                if left is not delivery and not left.done.done():  # (its own result has nobody to read it)
                    left.done.set_exception(_LeaderGoneError())
        return delivery.done.result()

    async def _decide_batch(self, batch: list[Delivery]) -> None:
        """Decide ``batch`` (one run's results) and settle each delivery's future, never raising.

        If deciding them together fails, each is decided alone, so one result that cannot be recorded
        does not hold back the others.
        """
        if len(batch) > 1:
            try:
                results = await self._decide_together(batch)
            except Exception:
                log.warning(
                    "deciding %d results of run %s together failed; deciding each alone",
                    len(batch),
                    batch[0].job.instance_id,
                    exc_info=True,
                )
            else:
                for delivery, result in zip(batch, results, strict=True):
                    if not delivery.done.done():
                        delivery.done.set_result(result)
                return
        for delivery in batch:
            try:
                result = await self._decide_alone(delivery)
            except Exception as exc:  # noqa: BLE001 -- handed to the worker waiting for this result
                if not delivery.done.done():
                    delivery.done.set_exception(exc)
            else:
                if not delivery.done.done():
                    delivery.done.set_result(result)
