"""Workflow definitions the e2e tests start from (SPEC §1)."""

from __future__ import annotations

from typing import Any


def node(node_id: str, node_type: str, x: float, y: float = 0, **extra: Any) -> dict[str, Any]:
    config = extra.pop("config", {})
    return {
        "id": node_id,
        "type": node_type,
        "label": extra.pop("label", node_id),
        "position": {"x": x, "y": y},
        "config": config,
        **extra,
    }


def edge(source: str, target: str, handle: str = "default") -> dict[str, Any]:
    return {"id": f"e_{source}_{target}_{handle}", "source": source, "target": target, "sourceHandle": handle}


def chain(title: str, *pythons: tuple[str, str], end_params: dict[str, str] | None = None) -> dict[str, Any]:
    """start -> python... -> end, laid out left to right."""
    nodes = [node("start", "start", 0)]
    edges = []
    previous, handle = "start", "default"
    for i, (node_id, code) in enumerate(pythons, start=1):
        nodes.append(node(node_id, "python", i * 280, config={"code": code}))
        edges.append(edge(previous, node_id, handle))
        previous, handle = node_id, "success"
    nodes.append(node("end", "end", (len(pythons) + 1) * 280, config={"outputParameters": end_params or {}}))
    edges.append(edge(previous, "end", handle))
    return {"title": title, "nodes": nodes, "edges": edges}


ORDER_TRIAGE: dict[str, Any] = {
    "title": "Order triage",
    "nodes": [
        node("start", "start", 0),
        node(
            "score",
            "python",
            280,
            label="Score order",
            outputVariable="score",
            config={
                "code": "print('items:', len(ctx['input']['items']))\nreturn {'value': len(ctx['input']['items'])}"
            },
        ),
        node(
            "big",
            "condition",
            560,
            label="Big order?",
            config={"branches": [{"id": "large", "label": "Large", "expression": "ctx.score.value > 2"}]},
        ),
        node(
            "end",
            "end",
            840,
            joinMode="any",
            config={"outputParameters": {"score": "{{ ctx.score.value }}", "route": "{{ ctx.big.branch }}"}},
        ),
    ],
    "edges": [
        edge("start", "score"),
        edge("score", "big", "success"),
        edge("big", "end", "large"),
        edge("big", "end", "else"),
    ],
}
