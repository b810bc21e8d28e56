"""Definition builders for the seed-001 topologies (raw JSON, as a client would send them)."""

from __future__ import annotations

from itertools import pairwise
from typing import Any


def node(node_id: str, node_type: str = "step", **fields: Any) -> dict[str, Any]:
    config = fields.pop("config", {})
    return {"id": node_id, "type": node_type, "config": config, **fields}


def edge(source: str, target: str, handle: str | None = None) -> dict[str, Any]:
    e: dict[str, Any] = {"id": f"{source}-{target}-{handle or 'd'}", "source": source, "target": target}
    if handle is not None:
        e["sourceHandle"] = handle
    return e


def definition(nodes: list[dict[str, Any]], edges: list[dict[str, Any]], **options: Any) -> dict[str, Any]:
    d: dict[str, Any] = {"title": "test", "nodes": nodes, "edges": edges}
    if options:
        d["options"] = options
    return d


def end(node_id: str = "end", params: dict[str, Any] | None = None, **fields: Any) -> dict[str, Any]:
    return node(node_id, "end", config={"outputParameters": params or {}}, **fields)


def linear(length: int) -> dict[str, Any]:
    """start -> s1 -> ... -> sN -> end"""
    steps = [node(f"s{i}") for i in range(1, length + 1)]
    ids = ["start", *(s["id"] for s in steps), "end"]
    edges = [edge(a, b) for a, b in pairwise(ids)]
    return definition([node("start", "start"), *steps, end(params={"last": f"{{{{ ctx.s{length}.node }}}}"})], edges)


def diamond(width: int, join_mode: str = "all", **join_fields: Any) -> dict[str, Any]:
    """start -> b1..bN -> join -> end"""
    branches = [node(f"b{i}") for i in range(1, width + 1)]
    edges = [edge("start", b["id"]) for b in branches] + [edge(b["id"], "join") for b in branches]
    edges.append(edge("join", "end"))
    join = node("join", joinMode=join_mode, **join_fields)
    return definition([node("start", "start"), *branches, join, end()], edges)


def condition_into_join() -> dict[str, Any]:
    """start -> cond; big: a -> c -> join, else: b -> join; join -> end (its output names the join's node)."""
    return definition(
        [
            node("start", "start"),
            node("cond", "condition", config={"branches": [{"id": "big", "expression": "ctx.input.n > 10"}]}),
            node("a"),
            node("c"),
            node("b"),
            node("join"),
            end(params={"via": "{{ ctx.join.node }}"}),
        ],
        [
            edge("start", "cond"),
            edge("cond", "a", "big"),
            edge("a", "c"),
            edge("cond", "b", "else"),
            edge("c", "join"),
            edge("b", "join"),
            edge("join", "end"),
        ],
    )
