"""The chaos suite's checks find what they look for: each one, given a system state that breaks its invariant,
reports it (a check that cannot fail would let the soak pass whatever happened)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from flowdeck.storage.database import Database
from flowdeck.storage.tables import instance_logs, join_barriers, loop_states, node_jobs, wait_tokens
from tests.chaos import invariants

ROOT = Path(__file__).resolve().parents[2]


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


async def test_an_attempt_completed_twice_is_reported(db: Database) -> None:
    """The log's unique index keeps it from happening; the check is there for when an index or a migration
    does not (here the index is dropped to show the check sees it)."""
    async with db.transaction() as conn:
        await conn.execute(sa.text("DROP INDEX uq_instance_logs_node_event"))
        await conn.execute(instance_logs.insert(), [_log("a", 1, 1), _log("b", 1, 2), _log("b", 1, 2)])
    assert await invariants.completed_twice(db) == ["run r1: node b iteration '' attempt 1 completed 2 times"]


async def test_the_newest_attempts_completion_counts_and_older_ones_are_late(db: Database) -> None:
    async with db.transaction() as conn:
        await conn.execute(instance_logs.insert(), [_log("a", 1, 1), _log("b", 2, "two"), _log("b", 1, "one")])
    assert await invariants.counted_completions(db) == {("r1", "a", ""): (1, 1), ("r1", "b", ""): (2, "two")}
    assert await invariants.late_results(db) == 1


def test_a_run_that_went_on_with_a_zombies_output_is_reported() -> None:
    run = RUN | {"output": {"total": 3, "ticket": "old"}}
    counted = {("r1", "d", ""): (2, {"body": {"ticket": "new"}})}
    assert invariants.tickets_disagree([run], counted, "w1") == ["run r1: output ticket old, node d's (attempt 2) new"]
    assert invariants.tickets_disagree([run | {"output": {"ticket": "new"}}], counted, "w1") == []


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
    assert invariants.outputs_differ([RUN | {"output": {"total": 4, "ticket": "x"}}], baseline) == []  # tickets differ
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
        ([_node("a", "COMPLETED", 1, 7)], "the page ends showing the run None"),  # never told
        ([("workflow_status_update", {"status": "FAILED", "output": None})], "the browser was told FAILED"),
    ],
)
def test_a_browser_shown_something_the_log_does_not_say_is_reported(received: list[Any], problem: str) -> None:
    found = invariants.page_disagrees("r1", received, LOGGED, API_RUN)
    assert any(problem in p for p in found), found


def test_a_loop_bodys_iterations_are_compared_one_by_one() -> None:
    api_run = {
        "status": "COMPLETED",
        "output": None,
        "nodes": {"body": {"status": "COMPLETED", "iterations": {"0": {"status": "COMPLETED"}}}},
    }
    snapshot = (
        "workflow_run_snapshot",
        {"status": "RUNNING", "nodes": {"body": {"status": "RUNNING", "iterations": {"0": {"status": "RUNNING"}}}}},
    )
    final = ("workflow_status_update", {"status": "COMPLETED", "output": None})
    done = (
        "workflow_node_update",
        {"nodeID": "body", "iteration": "0", "status": "COMPLETED", "attempt": 1, "output": 5, "outputTruncated": None},
    )
    logged = {("body", "0"): (1, 5)}
    assert invariants.page_disagrees("r1", [snapshot, done, final], logged, api_run) == []
    assert invariants.page_disagrees("r1", [snapshot, final], logged, api_run) == [
        "run r1: the page ends showing ('body', '0') RUNNING, the API COMPLETED"
    ]


def test_a_delay_seen_waiting_in_a_snapshot_ends_when_a_successor_it_holds_moves() -> None:
    """The SQLite soak's one disagreement: the browser joined (again, after serve restarted) while a delay
    waited; the page completes the delay when the successor it holds starts, the mirror did not."""
    api_run = {
        "status": "COMPLETED",
        "output": None,
        "nodes": {"pause": {"status": "COMPLETED"}, "size": {"status": "COMPLETED"}},
    }
    waiting = {"status": "WAITING", "holds": ["size"], "nextAttemptAt": 5.0}
    snapshot = (
        "workflow_run_snapshot",
        {"status": "RUNNING", "nodes": {"pause": waiting, "size": {"status": "PENDING"}}},
    )
    size = {"nodeID": "size", "iteration": "", "attempt": 1, "output": 1, "outputTruncated": None}
    moved = [("workflow_node_update", {**size, "status": s}) for s in ("RUNNING", "COMPLETED")]
    final = ("workflow_status_update", {"status": "COMPLETED", "output": None})
    logged = {("size", ""): (1, 1)}
    assert invariants.page_disagrees("r1", [snapshot, *moved, final], logged, api_run) == []
    assert invariants.page_disagrees("r1", [snapshot, final], logged, api_run) == [
        "run r1: the page ends showing ('pause', '') WAITING, the API COMPLETED",
        "run r1: the page ends showing ('size', '') PENDING, the API COMPLETED",
    ]


DELAY_CASES = json.loads((ROOT / "frontend/src/runs/delayHolds.cases.json").read_text())["cases"]


@pytest.mark.parametrize("case", DELAY_CASES, ids=[c["name"] for c in DELAY_CASES])
def test_the_page_mirror_shows_a_delay_as_the_editor_does(case: dict[str, Any]) -> None:
    """The editor's run page passes the same cases (frontend/src/runs/delays.test.ts)."""
    snapshot = ("workflow_run_snapshot", {"status": "RUNNING", "nodes": case["nodes"]})
    updates = [
        ("workflow_node_update", {"nodeID": node_id, "iteration": iteration, "status": status})
        for node_id, iteration, status in case["updates"]
    ]
    _, nodes = invariants.page_shows([snapshot, *updates])
    shown = {}
    for where in case["shown"]:
        node_id, _, iteration = where.partition("@")
        shown[where] = nodes.get((node_id, iteration))
    assert shown == case["shown"]
