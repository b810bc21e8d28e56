"""A database connection that PostgreSQL closed (a restart, a failover, a firewall, ``pg_terminate_backend``)
costs a request latency, never a 5xx, and costs a run nothing: every run completes, no node twice.

PostgreSQL only (SQLite has no connections to lose); under ``CI=true`` an unreachable server is an error.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections import Counter
from collections.abc import AsyncIterator
from typing import Any

import asyncpg  # type: ignore[import-untyped]
import httpx
import pytest
import pytest_asyncio
import sqlalchemy as sa
from sqlalchemy.engine import make_url

from flowdeck.storage import database
from flowdeck.storage.disconnects import WriteTrack
from flowdeck.storage.tables import instance_logs
from tests.api.conftest import Account, Server
from tests.api.test_approvals import approval, decide, finished, save, waiting_approval
from tests.api.test_approvals import run as run_workflow
from tests.api.test_waits import is_waiting, start, until_seen, waiting
from tests.support.graphs import definition, diamond, edge, end, node

pytestmark = pytest.mark.asyncio(loop_scope="module")

TERMINATE = (
    "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity"
    " WHERE datname = current_database() AND pid <> pg_backend_pid()"
)


@pytest.fixture(scope="module")
def api_db_url(postgres_url: str) -> str:
    """This module's server runs on PostgreSQL only."""
    return postgres_url


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def admin(postgres_url: str) -> AsyncIterator[asyncpg.Connection]:
    """A connection of the test's own, outside Flowdeck's pool: it terminates Flowdeck's."""
    u = make_url(postgres_url)
    conn = await asyncpg.connect(host=u.host, port=u.port or 5432, user=u.username, database=u.database)
    yield conn
    await conn.close()


async def terminate_all(admin: asyncpg.Connection) -> int:
    return int(await admin.fetchval(TERMINATE))


def diamond_in_a_loop() -> dict:
    """start -> each (loop over 3 items, 2 at a time) -> a diamond of 2 per item -> end."""
    return definition(
        [
            node("start", "start"),
            node("each", "loop", config={"items": [1, 2, 3], "concurrency": 2}),
            node("split"),
            node("left"),
            node("right"),
            node("join", joinMode="all"),
            end(params={"result": "{{ ctx.each.count }}"}),
        ],
        [
            edge("start", "each"),
            edge("each", "split", "loop"),
            edge("split", "left"),
            edge("split", "right"),
            edge("left", "join"),
            edge("right", "join"),
            edge("each", "end", "done"),
        ],
    )


async def test_requests_after_every_connection_was_terminated_answer_2xx(
    server: Server, alice: Account, admin: asyncpg.Connection
) -> None:
    created = await alice.client.post("/api/workflows", json=diamond(2))
    assert created.status_code == 201, created.text
    workflow_id = created.json()["id"]
    first = (await alice.client.post(f"/api/workflows/{workflow_id}/runs")).json()["instanceId"]
    await server.engine.wait_for_run(first, 10)
    version = 1
    for _ in range(3):  # each round: the pool holds connections PostgreSQL has closed
        assert await terminate_all(admin) > 0
        read = await alice.client.get(f"/api/runs/{first}")
        assert read.status_code == 200, read.text
        assert read.json()["status"] == "COMPLETED"
        assert (await alice.client.get("/api/workflows")).status_code == 200
        await terminate_all(admin)
        started = await alice.client.post(f"/api/workflows/{workflow_id}/runs")
        assert started.status_code == 202, started.text
        run = await server.engine.wait_for_run(started.json()["instanceId"], 15)
        assert run.status.value == "COMPLETED"
        await terminate_all(admin)
        updated = await alice.client.put(f"/api/workflows/{workflow_id}", json={**diamond(2), "version": version})
        assert updated.status_code == 200, updated.text
        version += 1


async def test_runs_complete_once_while_connections_are_terminated_again_and_again(
    server: Server, alice: Account, admin: asyncpg.Connection
) -> None:
    created = await alice.client.post("/api/workflows", json=diamond_in_a_loop())
    assert created.status_code == 201, created.text
    workflow_id = created.json()["id"]
    statuses: Counter[int] = Counter()
    finished = asyncio.Event()

    async def read_all_along() -> None:  # what a browser does meanwhile
        while not finished.is_set():  # how long a read waits out the terminations is not asserted: only its answer
            read = await alice.client.get("/api/runs", params={"workflowId": workflow_id}, timeout=60)
            statuses[read.status_code] += 1

    async def terminate_all_along() -> int:
        rounds = 0
        while not finished.is_set():
            await terminate_all(admin)
            rounds += 1
            await asyncio.sleep(0.2)
        return rounds

    reader, killer = asyncio.create_task(read_all_along()), asyncio.create_task(terminate_all_along())
    try:
        run_ids = []
        for _ in range(30):
            started = await alice.client.post(f"/api/workflows/{workflow_id}/runs")
            statuses[started.status_code] += 1
            if started.status_code == 202:
                run_ids.append(started.json()["instanceId"])
        runs = [await server.engine.wait_for_run(run_id, 60) for run_id in run_ids]
    finally:
        finished.set()
        await reader
        rounds = await killer
    assert rounds >= 5
    assert set(statuses) <= {200, 202}, statuses
    assert len(run_ids) == 30
    assert [(run.status.value, run.error) for run in runs] == [("COMPLETED", None)] * 30
    assert all(run.output == {"result": 3} for run in runs)
    async with server.engine.db.read() as conn:
        completed = (
            await conn.execute(
                sa.select(instance_logs.c.instance_id, instance_logs.c.node_id, instance_logs.c.iteration).where(
                    instance_logs.c.instance_id.in_(run_ids), instance_logs.c.event_type == "NODE_COMPLETED"
                )
            )
        ).all()
    twice = [key for key, count in Counter(completed).items() if count > 1]
    assert twice == []
    # 3 items x (split, left, right, join) + start, each, end
    assert Counter(row[0] for row in completed) == dict.fromkeys(run_ids, 15)


async def test_a_write_that_loses_its_connection_before_committing_runs_again(
    alice: Account, admin: asyncpg.Connection
) -> None:
    created = await alice.client.post("/api/workflows", json=diamond(2))
    workflow_id = created.json()["id"]
    blocker = admin
    async with blocker.transaction():  # holds the workflow's row: the save's UPDATE waits for it, mid-transaction
        await blocker.execute("SELECT 1 FROM workflows WHERE id = $1 FOR UPDATE", workflow_id)
        save = asyncio.create_task(alice.client.put(f"/api/workflows/{workflow_id}", json={**diamond(3), "version": 1}))
        async with asyncio.timeout(30):  # the event: the save's transaction waits on the lock
            while not await blocker.fetchval(
                "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'"
            ):
                assert not save.done(), f"the save answered without waiting for the lock: {(await save).text}"
                await asyncio.sleep(0.01)
        assert await terminate_all(blocker) >= 1  # its connection closes after BEGIN, before COMMIT
    saved = await save
    assert saved.status_code == 200, saved.text
    assert saved.json()["version"] == 2  # saved once: the first attempt never committed
    latest = await alice.client.get(f"/api/workflows/{workflow_id}")
    assert latest.status_code == 200 and latest.json()["version"] == 2


def lose_the_answer_of_a_commit(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The next COMMIT of a request that recognises its own writes commits, and then its connection closes
    before the answer arrives (what a restart or ``pg_terminate_backend`` at that instant does); the marks
    of the requests it happened to."""
    commit, cut = database.commit, []

    class AnswerLost:
        def __init__(self, tx: Any) -> None:
            self.tx = tx

        async def commit(self) -> None:
            await self.tx.commit()
            raise asyncpg.ConnectionDoesNotExistError("connection was closed in the middle of operation")

    async def commit_then_lose_the_answer(tx: Any, track: WriteTrack | None) -> None:
        if track is not None and track.recognises_own and not cut:
            cut.append(track.key)
            tx = AnswerLost(tx)
        await commit(tx, track)

    monkeypatch.setattr(database, "commit", commit_then_lose_the_answer)
    return cut


async def test_a_resume_whose_commit_lost_its_answer_is_answered_as_a_resume(
    server: Server,
    alice: Account,
    anonymous: httpx.AsyncClient,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The connection closed while PostgreSQL committed the resume: the request runs again, finds the wait
    resumed by itself (not by someone else) and answers 202, not 500; a second resume is still a 409. The
    log says it in a warning, not as an unexpected error with a traceback."""
    run_id = await start(alice, waiting({"resumeOn": "webhook", "timeoutSeconds": 3600}))
    url = (await until_seen(alice, run_id, is_waiting()))["nodes"]["hold"]["waitingFor"]["url"]
    cut = lose_the_answer_of_a_commit(monkeypatch)

    with caplog.at_level(logging.WARNING, logger="flowdeck.api"):
        resumed = await anonymous.post(url, json={"approved": True})

    assert cut, "the resume's COMMIT was never cut off"
    said = [(r.levelname, r.getMessage()) for r in caplog.records if r.name.startswith("flowdeck.api")]
    assert [level for level, _ in said] == ["WARNING", "WARNING"], said
    assert said[0][1] == f"POST {url} lost its database connection (connection was closed in the middle of operation)"
    assert resumed.status_code == 202, resumed.text
    assert resumed.json() == {"instanceId": run_id, "nodeId": "hold"}
    again = await anonymous.post(url, json={"approved": False})
    assert again.status_code == 409, again.text
    await server.engine.wait_for_run(run_id, 15)
    run = (await alice.client.get(f"/api/runs/{run_id}")).json()
    assert run["status"] == "COMPLETED" and run["output"]["got"]["body"] == {"approved": True}


@pytest_asyncio.fixture(loop_scope="module")
async def bob(server: Server, alice: Account) -> AsyncIterator[Account]:
    """Another user of alice's tenant: he may decide her approvals."""
    account = await server.account(f"bob-{uuid.uuid4().hex[:8]}@acme.test", alice.tenant)
    async with account.client:
        yield account


async def test_a_decision_whose_commit_lost_its_answer_is_answered_as_decided(
    server: Server, alice: Account, bob: Account, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Bob's approval committed and its answer was lost: the request runs again and answers 200 with the
    approval as his decision left it, not 500 (nor 409 "already decided", which was his own)."""
    run_id = await run_workflow(alice, await save(alice, approval({})))
    approval_id = await waiting_approval(alice, run_id)
    cut = lose_the_answer_of_a_commit(monkeypatch)

    granted = await decide(bob, approval_id, "approve", "fine")

    assert cut, "the decision's COMMIT was never cut off"
    assert granted.status_code == 200, granted.text
    assert granted.json()["status"] == "approved"
    assert [(d["email"], d["decision"]) for d in granted.json()["decisions"]] == [(bob.email, "approve")]
    assert (await decide(bob, approval_id, "approve")).status_code == 409
    done = await finished(server, alice, run_id)
    assert done["status"] == "COMPLETED" and done["output"]["got"]["decision"] == "approve"
