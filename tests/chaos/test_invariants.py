"""The chaos suite's checks find what they look for: each one, given a system state that breaks its invariant,
reports it (a check that cannot fail would let the soak pass whatever happened)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from flowdeck.storage.database import Database
from flowdeck.storage.tables import instance_logs, join_barriers, loop_states, node_jobs, wait_tokens
from tests.chaos import invariants


@pytest.fixture
async def db(tmp_path: Path) -> AsyncIterator[Database]:
    database = Database(f"sqlite+aiosqlite:///{tmp_path / 'checks.db'}")
    await database.create_all()
    yield database
    await database.dispose()


def _log(node_id: str, attempt: int, output: Any, event: str = "NODE_COMPLETED", iteration: str = "") -> dict[str, Any]:
    return {
        "instance_id": "r1",
        "node_id": node_id,
        "iteration": iteration,
        "event_type": event,
        "node_attempt": attempt,
        "payload": {"output": output},
        "created_at": 1.0,
    }


RUN = {"id": "r1", "workflow_id": "w1", "status": "COMPLETED", "input": {"n": 1}, "output": {"total": 3}, "error": None}


async def test_a_node_completed_by_two_attempts_is_reported(db: Database) -> None:
    async with db.transaction() as conn:
        await conn.execute(instance_logs.insert(), [_log("a", 1, 1), _log("b", 1, 2), _log("b", 2, 2)])
    assert await invariants.completed_twice(db) == ["run r1: node b iteration '' completed 2 times"]


async def test_jobs_and_half_counted_barriers_loops_and_waits_of_a_completed_run_are_reported(db: Database) -> None:
    async with db.transaction() as conn:
        await conn.execute(
            node_jobs.insert(),
            [
                {
                    "instance_id": "r1",
                    "node_id": "a",
                    "attempt": 1,
                    "available_at": 1.0,
                    "lease_owner": "w-1",
                    "created_at": 1.0,
                }
            ],
        )
        await conn.execute(
            join_barriers.insert(),
            [
                {"instance_id": "r1", "node_id": "join", "iteration": "", "resolved_edges": 2, "taken_edges": 2},
                {"instance_id": "r1", "node_id": "join2", "iteration": "", "resolved_edges": 3, "taken_edges": 3},
            ],
        )
        await conn.execute(
            loop_states.insert(),
            [{"instance_id": "r1", "node_id": "each", "iteration": "", "item_count": 3, "finished": 2, "attempt": 1}],
        )
        await conn.execute(
            wait_tokens.insert(),
            [
                {
                    "token_hash": "h",
                    "instance_id": "r1",
                    "node_id": "hold",
                    "iteration": "",
                    "resume_on": "webhook",
                    "created_at": 1.0,
                }
            ],
        )
    found = await invariants.leftovers(db, [RUN], {"w1": {"join": 3, "join2": 3}})
    assert found == [
        "run r1: a job of a is left (lease owner w-1)",
        "run r1: barrier of join resolved 2 of 3 edges, took 2",
        "run r1: loop each finished 2 of 3",
        "run r1: wait hold completed without being resumed",
    ]


def test_an_output_unlike_the_twin_without_faults_is_reported() -> None:
    baseline = {invariants.input_key("w1", {"n": 1}): {"total": 4}}
    assert invariants.outputs_differ([RUN], baseline) == ["run r1: output {'total': 3} but {'total': 4} without faults"]
    assert invariants.outputs_differ([RUN], {}) == ['run r1: no run without faults of workflow w1 with input {"n": 1}']


def test_runs_left_unfinished_or_failed_are_reported() -> None:
    runs = [RUN, RUN | {"id": "r2", "status": "RUNNING"}, RUN | {"id": "r3", "status": "FAILED", "error": "boom"}]
    assert invariants.unfinished(runs) == ["run r2 is RUNNING"]
    assert invariants.not_completed(runs) == ["run r3 FAILED: boom"]


def _node(node_id: str, status: str, attempt: int = 1, output: Any = None) -> tuple[str, dict[str, Any]]:
    update = {"nodeID": node_id, "iteration": "", "status": status, "attempt": attempt, "output": output}
    return "workflow_node_update", update | {"outputTruncated": None}


API_RUN = {"status": "COMPLETED", "output": {"total": 3}, "nodes": {"a": {"status": "COMPLETED"}}}
LOGGED = {("a", ""): (1, 7)}


def test_a_browser_that_saw_what_the_log_says_agrees() -> None:
    snapshot = ("workflow_run_snapshot", {"status": "RUNNING", "nodes": {"a": {"status": "RUNNING"}}})
    final = ("workflow_status_update", {"status": "COMPLETED", "output": {"total": 3}})
    assert invariants.page_disagrees("r1", [snapshot, _node("a", "COMPLETED", 1, 7), final], LOGGED, API_RUN) == []


@pytest.mark.parametrize(
    ("received", "problem"),
    [
        (
            [_node("a", "COMPLETED", 2, 7)],
            "the browser saw ('a', '') complete as",
        ),  # an attempt the log did not complete
        ([_node("a", "COMPLETED", 1, 8)], "the browser saw ('a', '') complete as"),  # another output
        ([_node("a", "COMPLETED", 1, 7), _node("a", "RUNNING")], "the page ends showing"),  # a stale update last
        ([_node("a", "COMPLETED", 1, 7)], "the page ends showing None"),  # never told the run ended
        ([("workflow_status_update", {"status": "FAILED", "output": None})], "the browser was told FAILED"),
    ],
)
def test_a_browser_shown_something_the_log_does_not_say_is_reported(received: list[Any], problem: str) -> None:
    found = invariants.page_disagrees("r1", received, LOGGED, API_RUN)
    assert any(problem in p for p in found), found
