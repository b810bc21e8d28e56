"""Counters a decision adds to while its transaction holds the run's row locked: the run's stored-output
bytes (``instances.output_bytes``, storage/run_bytes.py) and its join barriers' edge counts.

A decision's transaction locks its run's ``instances`` row before anything else (``take_next_version``,
engine/cas.py), and only decisions of that run change these counters, so from that lock to the commit
nobody else can. The first value of each counter comes from the database (the version claim returns the
bytes, a barrier's first bump its counts after the add); the adds after it are kept here and written as
the transaction ends, one statement per counter (``write``). The branches of a fan-out decided together
thus cost one charge and one bump of their join per transaction, not one of each per branch.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

import sqlalchemy as sa

from flowdeck.storage.compiled import compile_each
from flowdeck.storage.database import Connection, Database
from flowdeck.storage.run_bytes import ADD_CHARGE, charge_output, fits
from flowdeck.storage.tables import join_barriers

__all__ = ("HeldCounters",)

EdgeCounts = tuple[int, int]
"""(resolved, taken) incoming edges of a join."""

_ADD_BYTES: Final = compile_each(
    sa.text(f"UPDATE instances SET {ADD_CHARGE} WHERE id = :p_instance_id"), returns_rows=False
)
_b = join_barriers.c
_ADD_EDGES: Final = compile_each(
    join_barriers.update()
    .where(_b.instance_id == sa.bindparam("p_instance_id"), _b.node_id == sa.bindparam("p_node_id"))
    .where(_b.iteration == sa.bindparam("p_iteration"))
    .values(
        resolved_edges=_b.resolved_edges + sa.bindparam("p_resolved", type_=sa.Integer),
        taken_edges=_b.taken_edges + sa.bindparam("p_taken", type_=sa.Integer),
    ),
    returns_rows=False,
)


class HeldCounters:
    """One transaction's counters of the runs whose rows it holds."""

    def __init__(self, conn: Connection, db: Database) -> None:
        self._conn = conn
        self._db = db
        self._bytes: dict[str, list[int]] = {}
        """Per held run: [bytes stored when it was locked plus those written since, bytes not yet written]."""
        self._edges: dict[tuple[str, str, str], list[int]] = {}
        """Per (run, join, scope) of a held run: [resolved, taken, resolved not yet written, taken not yet written]."""

    def hold(self, instance_id: str, stored_bytes: int) -> None:
        """The run's row is locked to the commit, with ``stored_bytes`` charged to it."""
        self._bytes.setdefault(instance_id, [stored_bytes, 0])

    async def charge(self, instance_id: str, charge: int, budget: int) -> bool:
        """Count ``charge`` bytes (negative: a refund) against the run's budget if they fit; ``False``, and
        nothing counted, when they would not."""
        held = self._bytes.get(instance_id)
        if held is None:  # a run this transaction does not hold: the database decides
            is_sqlite = self._db.is_sqlite
            return await charge_output(
                self._conn, is_sqlite=is_sqlite, instance_id=instance_id, charge=charge, budget=budget
            )
        if not fits(held[0] + held[1], charge, budget):
            return False
        held[1] += charge
        return True

    async def bump_barriers(
        self, instance_id: str, iteration: str, deltas: Mapping[str, EdgeCounts]
    ) -> dict[str, EdgeCounts]:
        """Add (resolved, taken) edge counts to each node's barrier; returns the counts after the add."""
        after: dict[str, EdgeCounts] = {}
        held_run = instance_id in self._bytes
        for node_id in sorted(deltas):  # a fixed order: concurrent upserts can't deadlock each other
            resolved, taken = deltas[node_id]
            key = (instance_id, node_id, iteration)
            held = self._edges.get(key)
            if held is not None:
                held[0] += resolved
                held[1] += taken
                held[2] += resolved
                held[3] += taken
                after[node_id] = (held[0], held[1])
                continue
            params = {
                "instance_id": instance_id,
                "node_id": node_id,
                "iteration": iteration,
                "resolved_edges": resolved,
                "taken_edges": taken,
            }
            row = (await self._conn.execute(self._db.sql.bump_barrier, params)).one()
            after[row[0]] = (row[1], row[2])
            if held_run:
                self._edges[key] = [row[1], row[2], 0, 0]
        return after

    async def replace_barriers(self, instance_id: str, counts: Mapping[tuple[str, str], EdgeCounts]) -> None:
        """Rewrite the barriers of a run, keyed (node, scope), from a fold of its log (partial retry); the
        next bump of each reads it again."""
        await self.write()
        for key in [key for key in self._edges if key[0] == instance_id]:
            del self._edges[key]
        await self._conn.execute(join_barriers.delete().where(_b.instance_id == instance_id))
        if counts:
            rows = [
                {"instance_id": instance_id, "node_id": n, "iteration": s, "resolved_edges": r, "taken_edges": t}
                for (n, s), (r, t) in counts.items()
            ]
            await self._conn.execute(join_barriers.insert(), rows)

    async def write(self) -> None:
        """Write the adds kept here (before the transaction commits)."""
        for instance_id, held in self._bytes.items():
            if held[1]:
                await self._conn.execute(
                    _ADD_BYTES.on(self._db.is_sqlite), {"p_instance_id": instance_id, "p_charge": held[1]}
                )
                held[0] += held[1]
                held[1] = 0
        for (instance_id, node_id, iteration), held in sorted(self._edges.items()):
            if held[2] or held[3]:
                params = {
                    "p_instance_id": instance_id,
                    "p_node_id": node_id,
                    "p_iteration": iteration,
                    "p_resolved": held[2],
                    "p_taken": held[3],
                }
                await self._conn.execute(_ADD_EDGES.on(self._db.is_sqlite), params)
                held[2] = held[3] = 0
