"""A PostgreSQL write transaction whose COMMIT did not commit is never taken for committed
(storage/pg_connection.py ``WriteTransaction``): PostgreSQL answers the COMMIT of an aborted transaction
with ROLLBACK and no error, and the COMMIT of one that had already ended with a warning only. Either
raises ``TransactionNotCommittedError`` (a write that did not happen, taken again like one whose
connection was lost), so a decision is never announced with nothing written."""

from __future__ import annotations

import contextlib

import pytest
import sqlalchemy as sa

from flowdeck.storage.database import Database
from flowdeck.storage.disconnects import TransactionNotCommittedError, unsent
from flowdeck.storage.tables import tenants


@pytest.fixture
def database_url(postgres_url: str) -> str:
    return postgres_url


async def _tenant_names(db: Database) -> list[str]:
    async with db.read() as conn:
        return [row[0] for row in await conn.execute(sa.select(tenants.c.name).order_by(tenants.c.name))]


@pytest.mark.parametrize("defer", [False, True], ids=["synchronous", "early-released"])
async def test_an_aborted_transaction_raises_at_its_commit_and_writes_nothing(db: Database, defer: bool) -> None:
    with pytest.raises(TransactionNotCommittedError, match="ROLLBACK") as raised:
        async with db.transaction(defer=defer) as conn:
            await conn.execute(tenants.insert().values(id="t-aborted", name="aborted", created_at=0.0))
            with contextlib.suppress(sa.exc.DBAPIError):  # a caller that swallowed an error in the transaction
                await conn.execute(sa.text("SELECT 1 / 0"))
    assert unsent(raised.value)  # nothing was written: taken again like a write whose connection was lost
    assert await _tenant_names(db) == []


async def test_a_transaction_ended_before_its_commit_raises(db: Database) -> None:
    with pytest.raises(TransactionNotCommittedError, match="ended before its COMMIT"):
        async with db.transaction() as conn:
            await conn.execute(tenants.insert().values(id="t-ended", name="ended", created_at=0.0))
            await conn.execute(sa.text("ROLLBACK"))  # something on the connection ended it
    async with db.transaction() as conn:  # the pool hands out a working connection afterwards
        await conn.execute(tenants.insert().values(id="t-kept", name="kept", created_at=0.0))
    assert await _tenant_names(db) == ["kept"]
