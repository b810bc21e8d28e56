"""``flowdeck bench --history``'s data: about 20 real runs, then copies of them made in SQL
(``INSERT ... SELECT``) with new ids and times until the tenant has N runs, and what they take on disk.

A copy takes its template's row, log rows and labels; only its id, its times (one run every
``SPACING`` seconds, oldest first, older than the real runs), its caller's id (a copied child points at
the copy of its caller made in the same round) and the ``customer`` label's value (one of 1,000) differ.
"""

from __future__ import annotations

import secrets
import sys
import time
from dataclasses import dataclass
from typing import Any, Final

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import create_async_engine

from flowdeck.bench import NOOP, caller, chain
from flowdeck.engine.engine import Engine
from flowdeck.storage.database import Database
from flowdeck.storage.tables import instances

__all__ = ("COPY_MARK", "SPACING", "Templates", "bytes_per_run", "copies_of", "copy_runs", "real_runs")

SPACING: Final = 6.0
"""Seconds between two copied runs: ten a minute, the webhook workload of issue 22."""
BATCH: Final = 20_000
COPY_MARK: Final = "c0de"
_COPIED = [c.name for c in instances.c if c.name not in ("id", "parent_instance_id", "root_instance_id")]
_TIMES = ("created_at", "started_at", "completed_at", "updated_at", "deadline_at", "sla_at", "sla_breached_at")
_LOG_COLUMNS = "node_id, iteration, event_type, node_status, output_variable, payload, error_message, node_attempt"


@dataclass(frozen=True, slots=True)
class Templates:
    ids: list[str]
    """The real runs, in the order copies cycle through them."""
    parents: dict[int, int]
    """Template index of a child run -> template index of its caller."""


async def real_runs(engine: Engine, tenant_id: str) -> Templates:
    """20 real runs: labelled API and webhook runs of a 4-node chain, failing python runs, test runs,
    and a caller with its child run."""
    plain = await engine.create_workflow(tenant_id, chain(4) | {"title": "history chain"})
    hooked = await engine.create_workflow(tenant_id, chain(4) | {"title": "history webhook chain"})
    failing = chain(4, {"type": "python", "config": {"code": "return {'q': 1 / 0}"}}) | {"title": "history fails"}
    failing_wf = await engine.create_workflow(tenant_id, failing)
    child = await engine.create_workflow(tenant_id, chain(3) | {"title": "history child"})
    calling = await engine.create_workflow(tenant_id, caller(child.id) | {"title": "history caller"})
    ids: list[str] = []
    for i in range(6):
        labels = {"customer": "acme", "region": "eu" if i % 2 else "us"}
        ids.append(await engine.start_workflow_run(tenant_id, plain.id, {"i": i}, labels=labels))
    for i in range(6):
        ids.append(await engine.start_workflow_run(tenant_id, hooked.id, {"i": i}, trigger="webhook"))
    for i in range(4):
        ids.append(await engine.start_workflow_run(tenant_id, failing_wf.id, {"i": i}, labels={"customer": "acme"}))
    for _ in range(2):
        ids.append(await engine.start_test_run(tenant_id, chain(4, NOOP), {}, workflow_id=plain.id))
    parent = await engine.start_workflow_run(tenant_id, calling.id, {})
    for instance_id in [*ids, parent]:
        await engine.wait_for_run(instance_id, 60)
    async with engine.db.read() as conn:
        called = sa.select(instances.c.id).where(instances.c.parent_instance_id == parent)
        child_id = (await conn.execute(called)).scalar_one()
    ids += [parent, child_id]
    return Templates(ids, {len(ids) - 1: len(ids) - 2})


def _id_expr(db: Database, g: str) -> str:
    """A UUID-shaped id made from the integer ``g``: unique (its last 12 hex digits are ``g``), marked as a
    copy by its second block (``COPY_MARK``), with a hashed first block so prefixes spread as random ids do."""
    if db.is_sqlite:
        return (
            f"printf('%08x-{COPY_MARK}-4%03x-8%03x-%012x', (({g}) % 2147483648 * 2654435761) % 4294967296, {g} % 4096,"
            f" ({g} / 4096) % 4096, {g})"
        )
    return (
        f"lpad(to_hex(((({g})::bigint % 2147483648) * 2654435761) % 4294967296), 8, '0') || '-{COPY_MARK}'"
        f" || '-4' || lpad(to_hex(({g}) % 4096), 3, '0') || '-8' || lpad(to_hex((({g}) / 4096) % 4096), 3, '0')"
        f" || '-' || lpad(to_hex(({g})::bigint), 12, '0')"
    )


async def copy_runs(
    db: Database,
    templates: Templates,
    first: int,
    count: int,
    base: float,
    spacing: float = SPACING,
    ids: list[str] | None = None,
) -> None:
    """Copies ``first`` .. ``first + count - 1`` of the templates (copy ``g`` created at ``base + g * spacing``),
    every row of each (log rows, labels) moved in time with it; their ids appended to ``ids``, oldest first."""
    t = len(templates.ids)
    no_parent = "CAST(NULL AS INTEGER)"  # typed, or PostgreSQL reads a column of NULLs as text
    values = ", ".join(f"({i}, '{tid}', {templates.parents.get(i, no_parent)})" for i, tid in enumerate(templates.ids))
    shift = "c.created - i.created_at"
    columns = ", ".join(["id", "parent_instance_id", "root_instance_id", *_COPIED])  # children are one deep
    picked = ", ".join(
        f"i.{name} + ({shift})" if name in _TIMES and name != "created_at" else "c.created" if name == "created_at"
        else f"i.{name}"
        for name in _COPIED
    )  # fmt: skip
    done = 0
    started = time.perf_counter()
    while done < count:
        lo, hi = first + done, first + min(count, done + BATCH) - 1
        async with db.transaction() as conn:
            await conn.execute(sa.text("DROP TABLE IF EXISTS bench_copies"))
            await conn.execute(
                sa.text(
                    f"CREATE TEMPORARY TABLE bench_copies AS WITH RECURSIVE s(g) AS (SELECT {lo} UNION ALL "
                    f"SELECT g + 1 FROM s WHERE g < {hi}), tmpl(t, tid, parent_t) AS (VALUES {values}) "
                    f"SELECT s.g AS g, {_id_expr(db, 's.g')} AS new_id, tmpl.tid AS tid, "
                    f"CASE WHEN tmpl.parent_t IS NULL THEN NULL ELSE {_id_expr(db, 's.g - tmpl.t + tmpl.parent_t')} END"
                    f" AS parent_id, {base} + s.g * {spacing} AS created FROM s JOIN tmpl ON tmpl.t = s.g % {t}"
                )
            )
            await conn.execute(
                sa.text(
                    f"INSERT INTO instances ({columns}) SELECT c.new_id, c.parent_id, c.parent_id, {picked} "
                    "FROM bench_copies c JOIN instances i ON i.id = c.tid"
                )
            )
            await conn.execute(
                sa.text(
                    f"INSERT INTO instance_logs (instance_id, {_LOG_COLUMNS}, created_at) "
                    f"SELECT c.new_id, {', '.join('l.' + x.strip() for x in _LOG_COLUMNS.split(','))}, "
                    f"l.created_at + ({shift}) FROM bench_copies c JOIN instances i ON i.id = c.tid "
                    "JOIN instance_logs l ON l.instance_id = c.tid ORDER BY c.g, l.log_id"
                )
            )
            await conn.execute(
                sa.text(
                    "INSERT INTO run_labels (instance_id, name, tenant_id, value, created_at) "
                    "SELECT c.new_id, l.name, l.tenant_id, CASE WHEN l.name = 'customer' THEN "
                    "'c' || CAST(c.g % 1000 AS VARCHAR(8)) ELSE l.value END, c.created "
                    "FROM bench_copies c JOIN run_labels l ON l.instance_id = c.tid"
                )
            )
            if ids is not None:
                ids += (await conn.execute(sa.text("SELECT new_id FROM bench_copies ORDER BY g"))).scalars()
            await conn.execute(sa.text("DROP TABLE bench_copies"))
        done = hi - first + 1
        rate = done / (time.perf_counter() - started)
        sys.stderr.write(f"\rcopied {done:,}/{count:,} runs ({rate:,.0f}/s)")
        sys.stderr.flush()
    sys.stderr.write("\n")


async def copies_of(db: Database, instance_id: str, count: int, *, first_at: float, spacing: float) -> list[str]:
    """``count`` copies of one finished run, the first created at ``first_at`` and each next one ``spacing``
    seconds later; their ids, oldest first. Copies are numbered from a random start, so that copies made
    earlier in the same database (by the prune or history benchmark, or another test) keep their ids."""
    first = secrets.randbelow(2**40)
    ids: list[str] = []
    await copy_runs(db, Templates([instance_id], {}), first, count, first_at - first * spacing, spacing, ids)
    await analyze(db)
    return ids


async def analyze(db: Database) -> None:
    """PostgreSQL: fresh statistics and the visibility map index-only scans need, as autovacuum leaves them
    on a database that grew to this size over time. SQLite: nothing, as in production (Flowdeck never runs
    ``ANALYZE`` there, so its planner goes by the indexes' shapes, not by statistics)."""
    if db.is_sqlite:
        return
    engine = create_async_engine(db.url, isolation_level="AUTOCOMMIT")
    try:
        async with engine.connect() as conn:
            for table in ("instances", "instance_logs", "run_labels"):
                await conn.execute(sa.text(f"VACUUM (ANALYZE) {table}"))
    finally:
        await engine.dispose()


async def bytes_per_run(db: Database) -> list[dict[str, Any]]:
    """What each run's rows take: per table, its rows (with TOAST on PostgreSQL) and each index, in bytes
    per run (divided by every run in the database)."""
    async with db.read() as conn:
        runs = (await conn.execute(sa.text("SELECT count(*) FROM instances"))).scalar_one()
        if db.is_sqlite:
            rows = (
                await conn.execute(
                    sa.text(
                        "SELECT m.tbl_name, d.name, SUM(d.pgsize) FROM dbstat d JOIN sqlite_master m "
                        "ON m.name = d.name WHERE m.tbl_name IN ('instances', 'instance_logs', 'run_labels') "
                        "GROUP BY d.name ORDER BY m.tbl_name, d.name"
                    )
                )
            ).all()
        else:
            rows = (
                await conn.execute(
                    sa.text(
                        "SELECT t.relname, t.relname, pg_total_relation_size(t.oid) - pg_indexes_size(t.oid) "
                        "FROM pg_class t WHERE t.relname IN ('instances', 'instance_logs', 'run_labels') "
                        "UNION ALL SELECT t.relname, i.relname, pg_relation_size(i.oid) FROM pg_index x "
                        "JOIN pg_class t ON t.oid = x.indrelid JOIN pg_class i ON i.oid = x.indexrelid "
                        "WHERE t.relname IN ('instances', 'instance_logs', 'run_labels') ORDER BY 1, 2"
                    )
                )
            ).all()
    return [
        {"table": table, "part": "rows" if part == table else part, "bytesPerRun": round(int(size) / max(runs, 1))}
        for table, part, size in rows
    ]
