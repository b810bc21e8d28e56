"""The effects of early-released decisions whose outcome is unknown (PostgreSQL restarted before their WAL
flush, storage/pg_durability.py): announced as far as the database shows them, once it answers again.

A decision that was lost announces nothing; one that survived (a clean shutdown flushes the WAL) announces
what it did, so a browser watching its run is not left with a node that ended shown as running. An update is
announced only when the run as it stands now shows it as it is: a node already further along was moved on
by a later decision, which announces that itself. Wake-ups are announced in any case (a worker that finds
nothing due goes back to sleep), as are the stops of cancelled runs (a stop of a run that goes on is taken
back by its lease)."""

from __future__ import annotations

import asyncio
import datetime
import logging
from collections.abc import Awaitable, Callable

from flowdeck.engine.effects import Announcer, Effects, Held
from flowdeck.engine.publisher import NodeUpdate, RunUpdate
from flowdeck.storage.log_fold import NodeView
from flowdeck.storage.run_queries import RunView

__all__ = ("Recheck", "node_of", "shows")

log = logging.getLogger(__name__)

_ATTEMPTS = 3


def node_of(view: RunView, update: NodeUpdate) -> NodeView | None:
    """The node (or the loop iteration of it) ``update`` is about, as ``view`` shows it."""
    node = view.nodes.get(update.node_id)
    if node is not None and update.iteration:
        node = node.iterations.get(update.iteration)
    return node


def shows(view: RunView, update: NodeUpdate | RunUpdate) -> bool:
    """Whether the run as it stands shows ``update`` as it is (neither short of it nor past it)."""
    if isinstance(update, RunUpdate):
        return view.run.status is update.status
    node = node_of(view, update)
    return node is not None and node.attempt == update.attempt and node.status is update.status


class Recheck:
    def __init__(
        self,
        read_view: Callable[[str], Awaitable[RunView | None]],
        flush: Callable[[], Awaitable[datetime.datetime]],
        announce: Announcer,
    ) -> None:
        """``flush``: ``Database.flush_wal`` (it returns when the PostgreSQL that answered started)."""
        self._read_view = read_view
        self._flush = flush
        self._announce = announce
        self._tasks: set[asyncio.Task[None]] = set()

    def __call__(self, effects: Effects, held: Held) -> None:
        task = asyncio.get_running_loop().create_task(self._recheck(effects, held), name="flowdeck-recheck")
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _recheck(self, effects: Effects, held: Held) -> None:
        confirmed = Effects(effects.now, wake_at=effects.wake_at, stopped_runs=effects.stopped_runs)
        confirmed.jobs_added = effects.jobs_added
        try:
            views = await self._durable_views({update.instance_id for update in effects.updates})
            confirmed.updates += [u for u in effects.updates if (v := views.get(u.instance_id)) and shows(v, u)]
        except Exception as exc:  # noqa: BLE001 -- PostgreSQL away for good: a later decision shows the runs
            log.warning("could not read what decisions of unknown outcome did (%s); announcing none of them", exc)
        finally:  # whatever happens, the announcements behind it go on
            self._announce.settle(held, confirmed)

    async def _durable_views(self, runs: set[str]) -> dict[str, RunView | None]:
        """The runs as the database shows them durably: read between two WAL flushes answered by the same
        PostgreSQL (what another process committed asynchronously is seen before it is flushed)."""
        for _ in range(_ATTEMPTS):
            before = await self._flush()
            views = {instance_id: await self._read_view(instance_id) for instance_id in runs}
            if await self._flush() == before:
                return views
        raise RuntimeError(f"PostgreSQL restarted during each of {_ATTEMPTS} reads")
