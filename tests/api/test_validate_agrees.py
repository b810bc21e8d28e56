"""``POST /api/workflows/validate`` answers what saving would: every bad input goes through validate, create,
save and test run, and they agree (invalid exactly when the saves refuse, naming the same fields)."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Callable
from typing import Any

import httpx
import pytest

from tests.api.conftest import Account
from tests.api.test_bad_input import nested
from tests.support.graphs import definition, edge, end, linear, node

pytestmark = pytest.mark.asyncio(loop_scope="module")

Case = Callable[[str], dict[str, Any]]
"""A body, given the id of a workflow of another tenant."""


def _with(**fields: Any) -> Case:
    return lambda _: linear(1) | fields


def _node_field(key: str, value: Any) -> Case:
    def make(_: str) -> dict[str, Any]:
        graph = linear(1)
        graph["nodes"][1][key] = value
        return graph

    return make


def _invalid_graph(_: str) -> dict[str, Any]:  # the graph of test_bad_input: several problems at once
    return definition(
        [
            node("start", "start"),
            node("a", "teleport"),
            node("b", "delay", config={"seconds": {"not": "a number"}}),
            node("c", "condition", config={"branches": "all of them"}),
            node("d"),
            end(),
        ],
        [edge("start", "b"), edge("b", "d"), edge("d", "b"), edge("d", "nowhere"), edge("start", "c")],
    )


def _calls(workflow_id: str) -> dict[str, Any]:
    return definition(
        [node("start", "start"), node("sub", "workflow", config={"workflowId": workflow_id}), end()],
        [edge("start", "sub"), edge("sub", "end")],
    )


BAD: dict[str, Case] = {
    "unknown top-level fields": _with(owner_id="someone-else", is_admin=True),
    "an unknown field": _with(is_admin=True),
    "a version on create": _with(version=3),
    "a title that is a number": _with(title=123),
    "a title too long": _with(title="x" * 201),
    "a NUL in the title": _with(title="nul\x00title"),
    "nodes that are not a list": _with(nodes="all"),
    "a NUL in a node label": _node_field("label", "bad\x00label"),
    "a config nested too deep": _node_field("config", {"output": nested(80)}),
    "a graph with many problems": _invalid_graph,
    "no start node": lambda _: {"nodes": [], "edges": []},
    "a negative run timeout": lambda _: linear(1) | {"options": {"timeoutSeconds": -1}},
    "an unknown option of onFailure": lambda _: linear(1) | {"options": {"onFailure": {"url": "x", "to": 1}}},
    "a notification URL to metadata": lambda _: linear(1) | {"options": {"onFailure": {"url": "http://0xa9fea9fe/"}}},
    "a notification URL that cannot be read": lambda _: linear(1) | {"options": {"onSlaBreach": {"url": "http://xn--/"}}},
    "an error workflow of another tenant":
        lambda theirs: linear(1) | {"options": {"onFailure": {"workflowId": theirs}}},
    "a call of another tenant's workflow": _calls,
}  # fmt: skip

GOOD: dict[str, Case] = {
    "a small graph": lambda _: linear(1),
    "a notification URL": lambda _: linear(1) | {"options": {"onFailure": {"url": "https://example.com/hook"}}},
}


def _fields(problems: list[dict[str, Any]]) -> set[tuple[str | None, str | None]]:
    return {(p.get("nodeId"), p.get("path")) for p in problems if p.get("severity", "error") == "error"}


def _named(response: httpx.Response) -> set[tuple[str | None, str | None]]:
    """The fields a 400 names: its problems, or the field of the body that did not fit the type."""
    extra = response.json().get("extra") or []
    if extra and "code" in extra[0]:
        return _fields(extra)
    unknown = re.search(r"unknown field `([^`]*)`", extra[0]["message"])  # Litestar's key is then "data"
    return {(None, unknown.group(1) if unknown else extra[0]["key"])}


async def _answers(alice: Account, body: dict[str, Any], saved_id: str) -> dict[str, httpx.Response]:
    client = alice.client
    validated, created, saved, tested = await asyncio.gather(
        client.post("/api/workflows/validate", json=body),
        client.post("/api/workflows", json=body),
        client.put(f"/api/workflows/{saved_id}", json=body | {"version": 1}),
        client.post("/api/test-runs", json=body),
    )
    return {"validate": validated, "create": created, "save": saved, "test run": tested}


async def test_validate_says_invalid_exactly_when_save_refuses_naming_the_same_fields(
    alice: Account, mallory: Account
) -> None:
    theirs = (await mallory.client.post("/api/workflows", json=linear(1))).json()["id"]
    saved_id = (await alice.client.post("/api/workflows", json=linear(1))).json()["id"]
    for name, case in BAD.items():
        body = case(theirs)
        answers = await _answers(alice, body, saved_id)
        validated = answers.pop("validate")
        assert validated.status_code == 200, (name, validated.text)
        assert validated.json()["valid"] is False, (name, validated.text)
        fields = _fields(validated.json()["problems"])
        assert fields, name
        for where, answer in answers.items():
            if name == "a version on create" and where == "save":
                continue  # a save's body has a version: the one field that differs from create's
            assert answer.status_code == 400, (name, where, answer.text)
            assert _named(answer) == fields, (name, where, answer.text, validated.text)
    assert [w["id"] for w in (await alice.client.get("/api/workflows")).json()["items"]] == [saved_id]
    versions = (await alice.client.get(f"/api/workflows/{saved_id}/versions")).json()["items"]
    assert len(versions) == 2  # 1, and the save of "a version on create" (a save's body has one)


async def test_validate_says_valid_exactly_when_save_accepts(alice: Account) -> None:
    saved_id = (await alice.client.post("/api/workflows", json=linear(1))).json()["id"]
    for name, case in GOOD.items():
        answers = await _answers(alice, case(""), saved_id)
        assert answers["validate"].json() == {"valid": True, "problems": []}, name
        assert [answers[w].status_code for w in ("create", "save", "test run")] == [201, 200, 202], name
        saved_id = answers["create"].json()["id"]  # the next save starts from version 1 again


async def test_a_workflow_as_read_back_is_judged_as_create_judges_it(alice: Account) -> None:
    """Read-only fields (id, inputs, createdAt, updatedAt) are accepted by create, so by validate; a version
    is not (it belongs to a save's body), on either."""
    created = (await alice.client.post("/api/workflows", json=linear(1))).json()
    read = (await alice.client.get(f"/api/workflows/{created['id']}")).json()
    with_version = await alice.client.post("/api/workflows/validate", json=read)
    assert [p["path"] for p in with_version.json()["problems"]] == ["version"]
    assert (await alice.client.post("/api/workflows", json=read)).status_code == 400
    del read["version"]
    assert (await alice.client.post("/api/workflows/validate", json=read)).json() == {"valid": True, "problems": []}
    assert (await alice.client.post("/api/workflows", json=read)).status_code == 201
