"""The seed-001 topologies reach the right terminal state, output and per-node statuses."""

from __future__ import annotations

import pytest

from flowdeck.engine.engine import Engine
from tests.support.graphs import condition_into_join, definition, diamond, edge, end, linear, node
from tests.support.runs import run_to_end


async def test_linear_chain_completes_with_the_last_output(engine: Engine, tenant_id: str) -> None:
    outcome = await run_to_end(engine, tenant_id, linear(5), {"order": 7})
    assert outcome.run.status == "COMPLETED"
    assert outcome.run.output == {"last": "s5"}
    assert {n: v.status.value for n, v in outcome.nodes.items()} == dict.fromkeys(
        ["start", "s1", "s2", "s3", "s4", "s5", "end"], "COMPLETED"
    )
    assert outcome.nodes["start"].output == {"started": True, "inputReceived": {"order": 7}}


async def test_fan_out_runs_every_branch_and_merges_the_ends(engine: Engine, tenant_id: str) -> None:
    branches = ["a", "b", "c"]
    nodes = [node("start", "start")]
    edges = []
    for b in branches:
        nodes += [node(b), end(f"end_{b}", {b: f"{{{{ ctx.{b}.node }}}}"})]
        edges += [edge("start", b), edge(b, f"end_{b}")]
    outcome = await run_to_end(engine, tenant_id, definition(nodes, edges))
    assert outcome.run.status == "COMPLETED"
    assert outcome.run.output == {"a": "a", "b": "b", "c": "c"}


@pytest.mark.parametrize("width", [2, 5])
async def test_diamond_and_join_runs_once_after_every_branch(engine: Engine, tenant_id: str, width: int) -> None:
    outcome = await run_to_end(engine, tenant_id, diamond(width, "all"))
    assert outcome.run.status == "COMPLETED"
    assert outcome.count("NODE_STARTED", "join") == 1
    join_started = next(r.log_id for r in outcome.rows if r.event_type == "NODE_STARTED" and r.node_id == "join")
    branch_completions = [
        r.log_id for r in outcome.rows if r.event_type == "NODE_COMPLETED" and r.node_id.startswith("b")
    ]
    assert len(branch_completions) == width
    assert max(branch_completions) < join_started


async def test_diamond_or_join_runs_on_the_first_branch_only(engine: Engine, tenant_id: str) -> None:
    d = diamond(2, "any")
    d["nodes"][2]["config"] = {"sleep": 0.3}  # b2 is slow: join must not wait for it, nor run again after it
    outcome = await run_to_end(engine, tenant_id, d)
    assert outcome.run.status == "COMPLETED"
    assert outcome.count("NODE_STARTED", "join") == 1
    join_done = next(r.log_id for r in outcome.rows if r.event_type == "NODE_COMPLETED" and r.node_id == "join")
    slow_done = next(r.log_id for r in outcome.rows if r.event_type == "NODE_COMPLETED" and r.node_id == "b2")
    assert join_done < slow_done  # it ran before the slow branch finished
    assert outcome.status_of("b2") == "COMPLETED"  # and the run still waited for every node


async def test_deep_chain_of_100_nodes(engine: Engine, tenant_id: str) -> None:
    """start, 98 steps and end: 100 nodes on a path of 99 edges (the depth limit is 100)."""
    outcome = await run_to_end(engine, tenant_id, linear(98), timeout=60)
    assert outcome.run.status == "COMPLETED"
    assert outcome.run.output == {"last": "s98"}
    assert outcome.count("NODE_COMPLETED") == 100


async def test_error_edge_carries_the_failure_on(engine: Engine, tenant_id: str) -> None:
    d = definition(
        [
            node("start", "start"),
            node("risky", config={"failTimes": 5, "retryable": False}),
            node("recover"),
            end(params={"error": "{{ ctx.risky.error.message }}"}),
        ],
        [edge("start", "risky"), edge("risky", "recover", "error"), edge("recover", "end")],
    )
    outcome = await run_to_end(engine, tenant_id, d)
    assert outcome.run.status == "COMPLETED"
    assert outcome.run.output == {"error": "planned failure on attempt 1"}
    assert outcome.nodes["risky"].output == {"error": {"type": "NodeError", "message": "planned failure on attempt 1"}}


async def test_condition_skips_the_untaken_branch_into_a_join(engine: Engine, tenant_id: str) -> None:
    d = condition_into_join()
    small = await run_to_end(engine, tenant_id, d, {"n": 1})
    assert small.run.status == "COMPLETED"
    assert [small.status_of(n) for n in ("a", "c", "b", "join")] == ["SKIPPED", "SKIPPED", "COMPLETED", "COMPLETED"]
    assert small.nodes["cond"].output == {"branch": "else"}
    big = await run_to_end(engine, tenant_id, d, {"n": 50})
    assert [big.status_of(n) for n in ("a", "c", "b", "join")] == ["COMPLETED", "COMPLETED", "SKIPPED", "COMPLETED"]


async def test_a_join_whose_every_input_is_skipped_is_skipped_downstream(engine: Engine, tenant_id: str) -> None:
    d = definition(
        [
            node("start", "start"),
            node("cond", "condition", config={"branches": [{"id": "yes", "expression": "false"}]}),
            node("a"),
            node("b"),
            node("join"),
            end("end_join"),
            end("end_else", {"took": "else"}),
        ],
        [
            edge("start", "cond"),
            edge("cond", "a", "yes"),
            edge("cond", "b", "yes"),
            edge("a", "join"),
            edge("b", "join"),
            edge("join", "end_join"),
            edge("cond", "end_else", "else"),
        ],
    )
    outcome = await run_to_end(engine, tenant_id, d)
    assert outcome.run.status == "COMPLETED"
    assert [outcome.status_of(n) for n in ("a", "b", "join", "end_join")] == ["SKIPPED"] * 4
    assert outcome.run.output == {"took": "else"}


async def test_multi_level_join(engine: Engine, tenant_id: str) -> None:
    d = definition(
        [node("start", "start"), node("a"), node("b"), node("c"), node("d"), end(params={"d": "{{ ctx.d.node }}"})],
        [
            edge("start", "a"),
            edge("start", "b"),
            edge("a", "c"),
            edge("b", "c"),
            edge("a", "d"),
            edge("c", "d"),
            edge("d", "end"),
        ],
    )
    outcome = await run_to_end(engine, tenant_id, d)
    assert outcome.run.status == "COMPLETED"
    assert outcome.per_node("NODE_STARTED") == dict.fromkeys(["start", "a", "b", "c", "d", "end"], 1)


async def test_condition_branches_to_one_end_through_two_handles(engine: Engine, tenant_id: str) -> None:
    """The SPEC §1 shape: two edges from one condition into the same end node."""
    d = definition(
        [
            node("start", "start"),
            node("big", "condition", config={"branches": [{"id": "large", "expression": "ctx.input.n > 10"}]}),
            end(params={"n": "{{ ctx.input.n }}"}, joinMode="any"),
        ],
        [edge("start", "big"), edge("big", "end", "large"), edge("big", "end", "else")],
    )
    outcome = await run_to_end(engine, tenant_id, d, {"n": 3})
    assert outcome.run.status == "COMPLETED"
    assert outcome.run.output == {"n": 3}


async def test_the_outputs_of_every_end_reached_merge_in_log_order(engine: Engine, tenant_id: str) -> None:
    d = definition(
        [
            node("start", "start"),
            node("a", config={"output": {"v": "a"}}),
            node("b", config={"sleep": 0.05, "output": {"v": "b"}}),
            end("end_a", params={"who": "a", "only_a": 1}),
            end("end_b", params={"who": "b", "only_b": 2}),
        ],
        [edge("start", "a"), edge("start", "b"), edge("a", "end_a"), edge("b", "end_b")],
    )
    outcome = await run_to_end(engine, tenant_id, d)
    assert outcome.run.status == "COMPLETED"
    ends = [r.node_id for r in outcome.rows if r.event_type == "NODE_COMPLETED" and r.node_id in ("end_a", "end_b")]
    last = ends[-1][-1]  # the end that completed last wins the shared key
    assert outcome.run.output == {"who": last, "only_a": 1, "only_b": 2}
    statuses = [r.node_status for r in outcome.rows if r.event_type == "RUN_STATUS"]
    assert statuses == ["RUNNING", "COMPLETED"]
