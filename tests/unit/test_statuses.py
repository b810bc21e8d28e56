"""The node status table (domain/statuses.py): the order and the terminal statuses follow from it."""

from __future__ import annotations

from flowdeck.domain.statuses import (
    NODE_STATUS_RANK,
    NODE_TRANSITIONS,
    TERMINAL_NODE_STATUSES,
    NodeStatus,
    node_progress,
)

S = NodeStatus


def test_the_terminal_statuses_are_those_no_move_leaves() -> None:
    assert {S.COMPLETED, S.FAILED, S.SKIPPED, S.CANCELLED} == TERMINAL_NODE_STATUSES
    for move in NODE_TRANSITIONS:
        assert move.source not in TERMINAL_NODE_STATUSES, move


def test_every_move_within_an_attempt_goes_forward() -> None:
    for move in NODE_TRANSITIONS:
        before, after = node_progress(1, move.source), node_progress(2 if move.next_attempt else 1, move.target)
        assert after > before, move


def test_the_order_is_pending_dispatched_running_waiting_retrying_then_every_terminal_status() -> None:
    order = (S.PENDING, S.DISPATCHED, S.RUNNING, S.WAITING, S.RETRYING)
    assert [NODE_STATUS_RANK[s] for s in order] == [0, 1, 2, 3, 4]
    assert {NODE_STATUS_RANK[s] for s in TERMINAL_NODE_STATUSES} == {5}
    assert set(NODE_STATUS_RANK) == set(NodeStatus)


def test_every_status_is_reached_from_pending_and_every_unfinished_one_can_be_cancelled() -> None:
    reached, frontier = {S.PENDING}, [S.PENDING]
    while frontier:
        status = frontier.pop()
        for move in NODE_TRANSITIONS:
            if move.source is status and move.target not in reached:
                reached.add(move.target)
                frontier.append(move.target)
    assert reached == set(NodeStatus)
    cancellable = {move.source for move in NODE_TRANSITIONS if move.target is S.CANCELLED}
    assert cancellable == set(NodeStatus) - TERMINAL_NODE_STATUSES


def test_a_later_attempt_outranks_any_status_of_an_earlier_one() -> None:
    assert node_progress(2, "PENDING") > node_progress(1, "COMPLETED")
    assert node_progress(1, "RETRYING") < node_progress(1, "FAILED") == node_progress(1, "SKIPPED")
