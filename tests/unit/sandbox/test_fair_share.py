"""The sandbox pool's rules, without processes or clocks: tenants served in turn, a per-tenant share,
growth for a tenant held out, shrinking back to the floor (sandbox/fair_share.py)."""

from __future__ import annotations

import pytest

from flowdeck.sandbox.fair_share import PoolBounds, TenantLines


def _serve_all(lines: TenantLines[str]) -> list[str]:
    served = []
    while (chosen := lines.next_in_turn()) is not None:
        served.append(chosen[1])
    return served


def test_tenants_are_served_in_turn_not_first_come_first_served() -> None:
    lines: TenantLines[str] = TenantLines(share=10)
    for i in range(4):
        lines.join("busy", f"busy-{i}")  # the busy tenant queued first
    lines.join("quiet", "quiet-0")
    lines.join("quiet", "quiet-1")
    # Fewest held first, ties to the tenant served longest ago: the two alternate.
    assert _serve_all(lines) == ["busy-0", "quiet-0", "busy-1", "quiet-1", "busy-2", "busy-3"]


def test_a_newcomer_goes_before_a_tenant_that_was_just_served() -> None:
    lines: TenantLines[str] = TenantLines(share=2)
    lines.take("busy")
    lines.take("busy")  # holds both processes of a pool of two
    lines.join("busy", "busy-2")
    lines.join("quiet", "quiet-0")
    lines.give_back("busy")  # a process frees up: the quiet tenant holds none, so it is next
    assert lines.next_in_turn() == ("quiet", "quiet-0")
    assert lines.next_in_turn() == ("busy", "busy-2")


def test_a_tenant_never_holds_more_than_its_share() -> None:
    lines: TenantLines[str] = TenantLines(share=2)
    for i in range(3):
        lines.join("busy", f"busy-{i}")
    assert _serve_all(lines) == ["busy-0", "busy-1"]  # the third waits, even with processes free
    assert not lines.may_take("busy")
    assert lines.waiting == 1
    lines.give_back("busy")
    assert lines.next_in_turn() == ("busy", "busy-2")


def test_a_waiter_that_gives_up_leaves_its_line() -> None:
    lines: TenantLines[str] = TenantLines(share=2)
    lines.join("quiet", "q")
    assert lines.starving() == 1
    assert lines.leave("quiet", "q")
    assert not lines.leave("quiet", "q")
    assert lines.waiting == 0
    assert lines.starving() == 0
    assert lines.next_in_turn() is None


def test_starving_counts_waiting_tenants_that_hold_nothing() -> None:
    lines: TenantLines[str] = TenantLines(share=2)
    lines.take("busy")
    lines.join("busy", "b")  # waits but holds one: not starving
    lines.join("quiet", "q")
    lines.join("other", "o")
    assert lines.starving() == 2


def test_the_pool_grows_once_per_starving_tenant_up_to_the_ceiling() -> None:
    bounds = PoolBounds(floor=2, ceiling=6, idle_seconds=30)
    assert bounds.to_start(live=2, starting=0, starving=1) == 1
    assert bounds.to_start(live=2, starting=1, starving=1) == 0  # one is already on its way
    assert bounds.to_start(live=2, starting=0, starving=3) == 3
    assert bounds.to_start(live=5, starting=0, starving=3) == 1  # the ceiling
    assert bounds.to_start(live=6, starting=0, starving=3) == 0
    assert bounds.to_start(live=2, starting=0, starving=0) == 0


def test_the_pool_shrinks_to_its_floor_only_after_idling() -> None:
    bounds = PoolBounds(floor=2, ceiling=6, idle_seconds=30)
    assert bounds.to_stop(live=4, idle_for=[31, 30, 5]) == 2
    assert bounds.to_stop(live=3, idle_for=[31, 30, 5]) == 1  # never below the floor
    assert bounds.to_stop(live=4, idle_for=[29, 5]) == 0
    assert bounds.to_stop(live=2, idle_for=[100, 100]) == 0


@pytest.mark.parametrize(
    ("floor", "ceiling", "idle", "message"),
    [
        (0, 4, 30, "at least one worker"),
        (3, 2, 30, "below the floor"),
        (2, 6, 0, "idle_seconds"),
    ],
)
def test_bounds_refuse_nonsense(floor: int, ceiling: int, idle: float, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        PoolBounds(floor, ceiling, idle)
