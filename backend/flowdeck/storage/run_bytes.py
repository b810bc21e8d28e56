"""A run's stored-output budget (``FLOWDECK_MAX_RUN_BYTES``): the byte counter on its instance row.

Every output a run stores is charged to ``instances.output_bytes`` in the transaction that writes it,
and only if the counter stays within the budget; otherwise nothing is written and the node fails
(engine/run_budget.py says what a result costs). The condition and the increment are the two SQL
fragments below, used by the portable charge statement here and by PostgreSQL's one-statement
decisions (storage/statements_postgres.py, storage/chain_batches.py), so both paths apply one rule
(tests/integration/test_one_statement_equivalence.py holds them equal).
"""

from __future__ import annotations

from typing import Any, Final

import msgspec
import sqlalchemy as sa

from flowdeck.domain.statuses import EventType
from flowdeck.storage.compiled import compile_each
from flowdeck.storage.database import Connection
from flowdeck.storage.records import Job
from flowdeck.storage.tables import instance_logs

__all__ = (
    "ADD_CHARGE",
    "CHARGE_FITS",
    "add_charge",
    "charge_fits",
    "charge_output",
    "fits",
    "json_size",
    "result_logged",
)

_encoder = msgspec.json.Encoder()


def charge_fits(counter: str, charge: str, budget: str) -> str:
    """SQL: the counter plus the charge stays within the budget (each argument an SQL expression)."""
    return f"{counter} + CAST({charge} AS BIGINT) <= CAST({budget} AS BIGINT)"


def fits(counter: int, charge: int, budget: int) -> bool:
    """``charge_fits`` in Python, for a counter whose row the transaction holds (storage/held_counters.py;
    tests/integration/test_held_counters.py holds the two equal)."""
    return counter + charge <= budget


def add_charge(counter: str, charge: str) -> str:
    """SQL: the SET clause adding the charge to the counter."""
    return f"output_bytes = {counter} + CAST({charge} AS BIGINT)"


CHARGE_FITS: Final = charge_fits("output_bytes", ":p_charge", ":p_budget")
ADD_CHARGE: Final = add_charge("output_bytes", ":p_charge")

_CHARGE = sa.text(f"UPDATE instances SET {ADD_CHARGE} WHERE id = :p_instance_id AND {CHARGE_FITS}")
_COMPILED = compile_each(_CHARGE, returns_rows=False)


def json_size(value: Any) -> int:
    """The bytes ``value`` takes as stored JSON (the log's payloads are encoded the same way)."""
    return len(_encoder.encode(value))


async def charge_output(conn: Connection, *, is_sqlite: bool, instance_id: str, charge: int, budget: int) -> bool:
    """Add ``charge`` bytes to the run's counter if it stays within ``budget``; ``False`` (and nothing
    added) when it would not. Compiled once per dialect: it runs for every result (storage/compiled.py)."""
    params = {"p_instance_id": instance_id, "p_charge": charge, "p_budget": budget}
    result = await conn.execute(_COMPILED.on(is_sqlite), params)
    return bool(result.rowcount)


async def result_logged(conn: Connection, job: Job) -> bool:
    """Whether the attempt's NODE_COMPLETED row exists (a result over the budget that was delivered
    before: a duplicate, which must write nothing)."""
    logs = instance_logs.c
    found = await conn.execute(
        sa.select(logs.log_id).where(
            logs.instance_id == job.instance_id,
            logs.node_id == job.node_id,
            logs.iteration == job.iteration,
            logs.event_type == EventType.NODE_COMPLETED.value,
            logs.node_attempt == job.attempt,
        )
    )
    return found.first() is not None
