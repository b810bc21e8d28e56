"""Run labels (domain/labels.py) in ``run_labels``: written in the transaction that starts a run or
records the ``python`` node that set them, read for the run list and detail, and filtered on.

Each row copies its run's tenant and ``created_at`` so ``?label.name=value`` is one index read newest
first (``ix_run_labels_tenant_name_value_created``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

import sqlalchemy as sa

from flowdeck.storage.database import Connection
from flowdeck.storage.tables import instances, run_labels

__all__ = ("count_labels", "labels_of", "labels_statement", "rarest_first", "write_labels")


async def write_labels(conn: Connection, instance_id: str, labels: Mapping[str, str]) -> None:
    """Set ``labels`` on the run (a name it already has takes the new value), inside the caller's transaction.

    The run's row must exist in the same transaction: its tenant and creation time are copied from it."""
    if not labels:
        return
    await conn.execute(
        run_labels.delete().where(run_labels.c.instance_id == instance_id, run_labels.c.name.in_(list(labels)))
    )
    for name, value in labels.items():
        source = sa.select(
            sa.literal(instance_id, sa.String),
            sa.literal(name, sa.String),
            instances.c.tenant_id,
            sa.literal(value, sa.Text),
            instances.c.created_at,
        ).where(instances.c.id == instance_id)
        await conn.execute(
            run_labels.insert().from_select(["instance_id", "name", "tenant_id", "value", "created_at"], source)
        )


def labels_statement(instance_ids: list[str]) -> sa.Select[tuple[str, str, str]]:
    return (
        sa.select(run_labels.c.instance_id, run_labels.c.name, run_labels.c.value)
        .where(run_labels.c.instance_id.in_(instance_ids))
        .order_by(run_labels.c.instance_id, run_labels.c.name)
    )


async def labels_of(conn: Connection, instance_ids: Iterable[str]) -> dict[str, dict[str, str]]:
    """``{instance id: {name: value}}`` for the given runs (a run without labels is left out)."""
    ids = list(instance_ids)
    if not ids:
        return {}
    found: dict[str, dict[str, str]] = {}
    for instance_id, name, value in (await conn.execute(labels_statement(ids))).all():
        found.setdefault(instance_id, {})[name] = value
    return found


_PROBE = 10_000
"""How far ``rarest_first`` counts a label's runs: enough to tell a rare label from a common one."""


async def rarest_first(conn: Connection, tenant_id: str, labels: Sequence[tuple[str, str]]) -> list[tuple[str, str]]:
    """``labels`` with the one carried by the fewest runs first (each counted up to ``_PROBE`` in its
    index): the run list walks the first and looks the others up per run, so it walks the rarest."""
    if len(labels) < 2:
        return list(labels)
    counts = []
    for name, value in labels:
        some = (
            sa.select(run_labels.c.instance_id)
            .where(run_labels.c.tenant_id == tenant_id, run_labels.c.name == name, run_labels.c.value == value)
            .limit(_PROBE)
            .subquery()
        )
        counts.append(int((await conn.execute(sa.select(sa.func.count()).select_from(some))).scalar_one()))
    return [label for _, label in sorted(zip(counts, labels, strict=True), key=lambda pair: pair[0])]


async def count_labels(conn: Connection, instance_id: str, except_names: Iterable[str] = ()) -> int:
    """How many labels the run has, leaving out ``except_names`` (ones about to be set again)."""
    stmt = sa.select(sa.func.count()).where(run_labels.c.instance_id == instance_id)
    names = list(except_names)
    if names:
        stmt = stmt.where(run_labels.c.name.not_in(names))
    return int((await conn.execute(stmt)).scalar_one())
