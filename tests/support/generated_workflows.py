"""Hypothesis strategies for valid workflows and for the order their results are delivered in.

A workflow is drawn as a tree of blocks (a step, a chain, a fan-out with its join, a condition with
both handles joined again, a loop whose body is a block, a delay, a call of a child workflow, a
webhook ``wait``), compiled into the raw JSON a client sends. Smaller draws give smaller graphs, so a
failure shrinks to a minimal one. A schedule is a list of moves the driver (tests/support/equivalence.py)
applies in order; when it runs out, the driver delivers the first ready result, one at a time.
"""

from __future__ import annotations

import dataclasses
import pprint
from typing import Any

from hypothesis import strategies as st

from tests.support.graphs import definition, edge, end, node

__all__ = ("MOVES", "Example", "examples", "render_test_case")

MOVES = ("one", "together", "duplicate", "takeover", "resume")
"""one: decide the n-th ready result alone; together: the next 2-4 results of one run decided at once;
duplicate: deliver the last decided result again; takeover: every lease runs out, a rescuer takes the
jobs over and the paused holder's result of one of them arrives late; resume: resume the n-th waiting
``wait`` node."""


@dataclasses.dataclass(frozen=True)
class Example:
    workflow: dict[str, Any]
    child: dict[str, Any] | None
    """The workflow the ``workflow`` nodes call (its id is filled in as ``{{child}}``)."""
    run_input: dict[str, Any]
    schedule: list[tuple[str, int]]
    priority: int = 50
    """The run's priority (``POST …/runs``): its jobs carry it, on every path alike."""


@dataclasses.dataclass
class _Builder:
    nodes: list[dict[str, Any]] = dataclasses.field(default_factory=list)
    edges: list[dict[str, Any]] = dataclasses.field(default_factory=list)
    count: int = 0

    def add(self, prefix: str, node_type: str = "step", **fields: Any) -> str:
        self.count += 1
        node_id = f"{prefix}{self.count}"
        self.nodes.append(node(node_id, node_type, **fields))
        return node_id

    def link(self, source: tuple[str, str | None], target: str) -> None:
        self.edges.append(edge(source[0], target, source[1]))


Source = tuple[str, str | None]
"""The node (and handle) the next block hangs from."""


def _failing_step(draw: st.DrawFn, b: _Builder, src: Source, in_loop: bool) -> Source:
    """A step that may fail (retried or not), with an ``error`` edge or an errorHandling."""
    attempts = draw(st.integers(1, 3))
    fails = draw(st.integers(0, 3))
    config: dict[str, Any] = {"failTimes": fails}
    if draw(st.booleans()):
        config["retryable"] = False
    if in_loop and draw(st.booleans()):
        config["output"] = "{{ ctx.loop.item }}"
    fields: dict[str, Any] = {"retry": {"maxAttempts": attempts, "backoffSeconds": draw(st.sampled_from([0, 5]))}}
    handling = draw(st.sampled_from(["continue", "fail_workflow", "error_edge"]))
    if handling != "error_edge":
        fields["errorHandling"] = handling
    step = b.add("s", config=config, **fields)
    b.link(src, step)
    if handling != "error_edge":
        return (step, None)
    recover = b.add("recover")
    b.link((step, "error"), recover)
    join = b.add("join", joinMode=draw(st.sampled_from(["all", "any"])))
    b.link((step, "success"), join)
    b.link((recover, None), join)
    return (join, None)


def _block(draw: st.DrawFn, b: _Builder, src: Source, depth: int, loops: int, in_loop: bool) -> Source:
    """Draw one block hanging from ``src``; returns where the next one hangs from."""
    kinds = ["step", "step", "chain"]
    if depth < 3:
        kinds += ["fanout", "condition"]
        if loops < 2:
            kinds.append("loop")
    kinds += ["delay", "call", "wait"]
    kind = draw(st.sampled_from(kinds))
    if kind == "step":
        return _failing_step(draw, b, src, in_loop)
    if kind == "chain":
        for _ in range(draw(st.integers(2, 4))):
            step = b.add("s")
            b.link(src, step)
            src = (step, None)
        return src
    if kind == "fanout":
        join = b.add("join", joinMode=draw(st.sampled_from(["all", "any"])))
        for _ in range(draw(st.integers(2, 3))):
            tail = _block(draw, b, src, depth + 1, loops, in_loop)
            b.link(tail, join)
        return (join, None)
    if kind == "condition":
        expression = draw(st.sampled_from(["true", "false", "ctx.input.n > 2"]))
        cond = b.add("cond", "condition", config={"branches": [{"id": "yes", "expression": expression}]})
        join = b.add("join", joinMode=draw(st.sampled_from(["all", "any"])))
        b.link(_block(draw, b, (cond, "yes"), depth + 1, loops, in_loop), join)
        b.link(_block(draw, b, (cond, "else"), depth + 1, loops, in_loop), join)
        b.link(src, cond)
        return (join, None)
    if kind == "loop":
        items = list(range(draw(st.integers(0, 4))))
        loop = b.add("loop", "loop", config={"items": items, "concurrency": draw(st.integers(1, 4))})
        b.link(src, loop)
        _chain_of_blocks(draw, b, (loop, "loop"), depth + 1, loops + 1, True)
        return (loop, "done")
    if kind == "delay":
        delay = b.add("delay", "delay", config={"seconds": draw(st.sampled_from([1, 30]))})
        b.link(src, delay)
        return (delay, None)
    if kind == "call":
        call = b.add("call", "workflow", config={"workflowId": "{{child}}", "input": {"n": "{{ ctx.input.n }}"}})
        b.link(src, call)
        return (call, "success")
    hold = b.add("wait", "wait", config={"resumeOn": "webhook", "timeoutSeconds": 600})
    b.link(src, hold)
    return (hold, "success")


def _chain_of_blocks(draw: st.DrawFn, b: _Builder, src: Source, depth: int, loops: int, in_loop: bool) -> Source:
    for _ in range(draw(st.integers(1, 3))):
        src = _block(draw, b, src, depth, loops, in_loop)
    return src


@st.composite
def _workflow(draw: st.DrawFn) -> dict[str, Any]:
    b = _Builder()
    b.nodes.append(node("start", "start"))
    tail = _chain_of_blocks(draw, b, ("start", None), 0, 0, False)
    b.nodes.append(end(params={"n": "{{ ctx.input.n }}"}))
    b.link(tail, "end")
    return definition(b.nodes, b.edges)


def _child() -> dict[str, Any]:
    """The called workflow: a step that fails once and is retried, then its end."""
    nodes = [
        node("start", "start"),
        node("work", config={"failTimes": 1}, retry={"maxAttempts": 2, "backoffSeconds": 0}),
        end(params={"twice": "{{ ctx.input.n * 2 }}"}),
    ]
    return {**definition(nodes, [edge("start", "work"), edge("work", "end")]), "title": "child"}


_MOVE = st.tuples(st.sampled_from(MOVES), st.integers(0, 5))


@st.composite
def examples(draw: st.DrawFn) -> Example:
    workflow = draw(_workflow())
    calls = any(n["type"] == "workflow" for n in workflow["nodes"])
    schedule = draw(st.lists(_MOVE, max_size=40))
    priority = draw(st.sampled_from((50, 50, 1, 73, 100)))
    return Example(workflow, _child() if calls else None, {"n": draw(st.integers(0, 5))}, schedule, priority)


def render_test_case(example: Example) -> str:
    """The example as a test to paste into tests/integration/test_generated_cases.py (then ``ruff format``)."""
    fields = ",\n".join(
        f"        {name}=" + pprint.pformat(value, width=100, sort_dicts=False).replace("\n", "\n        ")
        for name, value in dataclasses.asdict(example).items()
    )
    return (
        "async def test_generated_case(equivalence_url: str, tmp_path: Path) -> None:\n"
        f"    example = Example(\n{fields},\n    )\n"
        "    await assert_all_paths_agree(example, equivalence_url, tmp_path)\n"
    )
