"""``wait`` nodes in the engine (docs/waits.md): their tokens made when a run opens, and the parking decision.

A run's top-level ``wait`` nodes get their tokens in the transaction that opens the run, and their URLs
are in its log as ``ctx.run.resumeUrls`` (a SYSTEM_SET row), so nodes before a wait can send them. A
``wait`` node in a loop body gets one token per iteration, made when the iteration reaches it (its URL
is in the node's ``waitingFor``).

Parking reuses the ``workflow`` node's mechanism (engine/calls.py): the node's job is unleased and due at
its timeout (``JobTable.park``), a SYSTEM_SET row records what it waits for (the node shows WAITING), and
a resume makes the job due at once (storage/waits.py); the node's handler then runs again and reads the
outcome (handlers/wait.py).
"""

from __future__ import annotations

from typing import Any

from flowdeck.domain.graph import Graph
from flowdeck.domain.statuses import EventType, NodeStatus, RunStatus
from flowdeck.engine.cas import DuplicateDeliveryError
from flowdeck.engine.effects import Effects, job_key
from flowdeck.engine.outcomes import Parked
from flowdeck.storage.records import Job, LogEvent
from flowdeck.storage.state import StateTransaction
from flowdeck.storage.waits import RUN_KEY, WAIT_KEY, insert_tokens, mark_parked, shown_wait, wait_token, wait_url

__all__ = ("WAIT_TYPE", "has_waits", "open_wait_tokens", "park_wait")

WAIT_TYPE = "wait"


def has_waits(graph: Graph) -> bool:
    return any(node.type == WAIT_TYPE for node in graph.definition.nodes)


async def open_wait_tokens(tx: StateTransaction, instance_id: str, tenant_id: str, graph: Graph) -> LogEvent | None:
    """Make the tokens of the run's top-level ``wait`` nodes; the ``ctx.run`` row to log (``None``: no waits)."""
    tokens = [
        wait_token(node.id, "", node.config)
        for node in graph.definition.nodes
        if node.type == WAIT_TYPE and graph.loop_of(node.id) is None
    ]
    if not tokens:
        return None
    await insert_tokens(tx.conn, instance_id, tenant_id, tokens, tx.now)
    urls = {t.node_id: wait_url(t) for t in tokens}
    run: dict[str, Any] = {"resumeUrls": urls}
    return LogEvent(instance_id, EventType.SYSTEM_SET, output_variable=RUN_KEY, payload={"run": run})


async def park_wait(tx: StateTransaction, job: Job, parked: Parked, status: RunStatus, effects: Effects) -> None:
    """Park the node's job until its token is used or its timeout passes. A resume that committed first
    makes it due at once instead (``mark_parked`` locks the token's row). Raises ``DuplicateDeliveryError``
    when a newer attempt holds the node."""
    if status is not RunStatus.RUNNING:
        return  # the run ended meanwhile: its jobs are gone
    marked = await mark_parked(tx.conn, job.instance_id, job.node_id, job.iteration, tx.now + parked.park.seconds)
    resumed, until = marked if marked is not None else (False, tx.now + parked.park.seconds)
    due = tx.now if resumed else until
    if not await tx.jobs.park(job, due):
        raise DuplicateDeliveryError
    effects.wake_at.append(due)
    if resumed:
        return
    waiting = {**parked.park.waiting_for, "until": until}
    if waiting.get("url") is None and job.iteration:
        # Parked again (by a partial retry): an iteration's URL exists only in what its first park showed.
        earlier = await shown_wait(tx.conn, job.instance_id, job.node_id, job.iteration)
        waiting["url"] = (earlier or {}).get("url")
    row = LogEvent(
        job.instance_id,
        EventType.SYSTEM_SET,
        node_id=job.node_id,
        iteration=job.iteration,
        output_variable=WAIT_KEY,
        payload={WAIT_KEY: waiting},
        node_attempt=job.attempt,
    )
    await tx.log_event(row)  # None when this attempt parked before (woken early): already recorded
    effects.node(job_key(job), NodeStatus.WAITING, job.attempt, waiting_for=waiting)
