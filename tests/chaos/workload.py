"""The chaos suite's mixed workload: six saved workflows (a diamond, a loop, retries into an error edge, a delay
and a condition, a sub-workflow call, a webhook-started run that waits for a webhook resume), each run with
inputs from a small set, so every run under faults has a twin run without faults to compare outputs with. The
diamond's ``http`` node calls a slow partner service, so faults often hit a node while it is in flight."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tests.support.graphs import definition, edge, end, node

INPUTS = [{"n": n} for n in range(5)]
LONG = 600  # seconds: no timeout of the workload may end a run that faults only delay


def _set(node_id: str, **fields: str) -> dict[str, Any]:
    return node(node_id, "set", config={"fields": [{"name": k, "value": v} for k, v in fields.items()]})


def diamond(partner_url: str) -> dict[str, Any]:
    square = node("c", "python", config={"code": "return {'z': ctx['input']['n'] ** 2}"})
    slow = node("d", "http", config={"url": partner_url + "/slow", "query": {"n": "{{ ctx.input.n }}"}})
    nodes = [
        node("start", "start"),
        _set("a", x="{{ ctx.input.n * 2 }}"),
        _set("b", y="{{ ctx.input.n + 1 }}"),
        square,
        slow,
        _set("join", total="{{ ctx.a.x + ctx.b.y + ctx.c.z + ctx.d.body.value }}"),
        end(params={"total": "{{ ctx.join.total }}", "ticket": "{{ ctx.d.body.ticket }}"}),
    ]
    edges = [edge("start", t, "default") for t in "abcd"]
    edges += [edge(s, "join", "success") for s in "abcd"] + [edge("join", "end", "success")]
    return definition(nodes, edges, timeoutSeconds=LONG) | {"title": "chaos diamond"}


def loop() -> dict[str, Any]:
    each = node("each", "loop", config={"items": "{{ range(ctx.input.n + 2) | list }}", "concurrency": 2})
    nodes = [
        node("start", "start"),
        each,
        _set("tenfold", v="{{ ctx.loop.item * 10 }}"),
        _set("plus", v="{{ ctx.tenfold.v + ctx.loop.index }}"),
        end(params={"values": "{{ ctx.each.items }}", "count": "{{ ctx.each.count }}"}),
    ]
    edges = [
        edge("start", "each", "default"),
        edge("each", "tenfold", "loop"),
        edge("tenfold", "plus", "success"),
        edge("each", "end", "done"),
    ]
    return definition(nodes, edges, timeoutSeconds=LONG) | {"title": "chaos loop"}


def retries() -> dict[str, Any]:
    flaky = node(
        "flaky",
        "python",
        config={"code": "raise ValueError('no luck for ' + str(ctx['input']['n']))"},
        retry={"maxAttempts": 3, "backoffSeconds": 0.2, "maxBackoffSeconds": 1},
        errorHandling="continue",
    )
    nodes = [
        node("start", "start"),
        flaky,
        _set("recover", message="{{ ctx.flaky.error.message }}"),
        end(params={"recovered": "{{ ctx.recover.message }}"}),
    ]
    edges = [edge("start", "flaky", "default"), edge("flaky", "recover", "error"), edge("recover", "end", "success")]
    return definition(nodes, edges, timeoutSeconds=LONG) | {"title": "chaos retries"}


def delay() -> dict[str, Any]:
    size = node(
        "size", "condition", config={"branches": [{"id": "big", "label": "Big", "expression": "ctx.input.n > 2"}]}
    )
    nodes = [
        node("start", "start"),
        node("pause", "delay", config={"seconds": 1}),
        size,
        _set("big", size="big"),
        _set("small", size="small"),
        end("endBig", params={"size": "{{ ctx.big.size }}"}),
        end("endSmall", params={"size": "{{ ctx.small.size }}"}),
    ]
    edges = [
        edge("start", "pause", "default"),
        edge("pause", "size", "default"),
        edge("size", "big", "big"),
        edge("size", "small", "else"),
        edge("big", "endBig", "success"),
        edge("small", "endSmall", "success"),
    ]
    return definition(nodes, edges, timeoutSeconds=LONG) | {"title": "chaos delay"}


def parent(child_id: str) -> dict[str, Any]:
    call = node(
        "call",
        "workflow",
        config={"workflowId": child_id, "input": {"n": "{{ ctx.input.n }}"}},
        timeoutSeconds=LONG,
    )
    nodes = [node("start", "start"), call, end(params={"child": "{{ ctx.call }}"})]
    edges = [edge("start", "call", "default"), edge("call", "end", "success")]
    return definition(nodes, edges, timeoutSeconds=LONG) | {"title": "chaos parent"}


def webhook() -> dict[str, Any]:
    hold = node("hold", "wait", config={"resumeOn": "webhook", "timeoutSeconds": LONG})
    nodes = [node("start", "start"), hold, end(params={"got": "{{ ctx.hold.body }}"})]
    edges = [edge("start", "hold", "default"), edge("hold", "end", "success")]
    return definition(nodes, edges, timeoutSeconds=LONG) | {"title": "chaos webhook"}


def resume_body(run_input: dict[str, Any]) -> dict[str, Any]:
    """What the webhook sender answers a waiting run with: a function of its input, so twins agree."""
    return {"answer": run_input["n"] * 7}


def standalone(partner_url: str) -> dict[str, dict[str, Any]]:
    """The workflows that need no other; ``parent`` calls the diamond, whose ``http`` node calls the partner."""
    return {name: build() for name, build in _STANDALONE.items()} | {"diamond": diamond(partner_url)}


_STANDALONE: dict[str, Callable[[], dict[str, Any]]] = {
    "loop": loop,
    "retries": retries,
    "delay": delay,
    "webhook": webhook,
}
