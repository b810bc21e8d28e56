"""Retry backoff and the context fold."""

from __future__ import annotations

import pytest

from flowdeck.domain.definition import RetryPolicy
from flowdeck.engine.retry import backoff_seconds
from flowdeck.storage.log_fold import merged_end_outputs
from flowdeck.storage.state import fold_context


@pytest.mark.parametrize(("attempt", "expected"), [(1, 1.0), (2, 2.0), (3, 4.0), (7, 60.0), (10, 60.0)])
def test_backoff_doubles_and_is_capped(attempt: int, expected: float) -> None:
    policy = RetryPolicy(max_attempts=10, backoff_seconds=1.0, max_backoff_seconds=60)
    assert backoff_seconds(policy, attempt, jitter=False) == expected
    assert expected <= backoff_seconds(policy, attempt) <= expected * 1.1


def test_context_folds_input_outputs_sentinels_and_end_outputs_in_log_order() -> None:
    rows = [
        ("INPUT_SET", None, None, {"input": {"id": 7}}),
        ("SYSTEM_SET", None, "__meta", {"__meta": 1}),
        ("NODE_COMPLETED", "score", "score", {"output": {"value": 3}, "handle": "success"}),
        ("NODE_COMPLETED", "end_a", "end_a", {"output": {"a": 1, "shared": "a"}, "end": True}),
        ("NODE_COMPLETED", "end_b", "end_b", {"output": {"b": 2, "shared": "b"}, "end": True}),
    ]
    ctx = fold_context(rows)
    assert ctx["input"] == {"id": 7}
    assert ctx["score"] == {"value": 3}
    assert ctx["__node_score"] is True
    assert ctx["__meta"] == 1
    assert ctx["output"] == {"a": 1, "b": 2, "shared": "b"}  # several ends merge, later wins


def test_ctx_output_and_the_run_output_follow_one_merge_rule() -> None:
    """A non-object end output (a pinned end, say) adds nothing to either: the same rule, one place."""
    ends = [
        {"output": {"a": 1}, "end": True},
        {"output": "not an object", "end": True},
        {"output": {"b": 2}, "end": True},
    ]
    rows = [("NODE_COMPLETED", f"end{i}", f"end{i}", payload) for i, payload in enumerate(ends)]
    assert fold_context(rows)["output"] == merged_end_outputs(ends) == {"a": 1, "b": 2}
