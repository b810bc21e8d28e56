"""What must hold after the chaos, read from the database and the API once every process is back.

Each check returns the violations it found (empty: it holds), so the suite reports all of them at once.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping
from typing import Any

import sqlalchemy as sa

from flowdeck.storage.database import Database
from flowdeck.storage.tables import instance_logs, instances, join_barriers, loop_states, node_jobs, wait_tokens

TERMINAL = {"COMPLETED", "FAILED", "CANCELLED"}


def input_key(workflow_id: str | None, run_input: Any) -> tuple[str | None, str]:
    return workflow_id, json.dumps(run_input, sort_keys=True)


async def all_runs(db: Database) -> list[Mapping[str, Any]]:
    columns = [instances.c.id, instances.c.workflow_id, instances.c.status, instances.c.input, instances.c.output]
    columns.append(instances.c.error)
    async with db.read() as conn:
        return [row._mapping for row in await conn.execute(sa.select(*columns))]


def unfinished(runs: list[Mapping[str, Any]]) -> list[str]:
    return [f"run {r['id']} is {r['status']}" for r in runs if r["status"] not in TERMINAL]


async def history(db: Database, run_id: str) -> list[str]:
    """The run's log, one line per row (time, event, node, attempt, the worker that started it), for a report."""
    logs = instance_logs.c
    query = (
        sa.select(logs.created_at, logs.event_type, logs.node_id, logs.iteration, logs.node_attempt, logs.payload)
        .where(logs.instance_id == run_id)
        .order_by(logs.log_id)
    )
    async with db.read() as conn:
        rows = (await conn.execute(query)).all()
    lines = []
    for at, event, node_id, iteration, attempt, payload in rows:
        worker = (payload or {}).get("workerId") if isinstance(payload, dict) else None
        where = f"{node_id}[{iteration}]" if iteration else node_id or "-"
        lines.append(f"{at:.4f} {event:<16} {where:<10} attempt {attempt}{f' by {worker}' if worker else ''}")
    return lines


def runs_named(problems: list[str]) -> list[str]:
    """The run ids the problems name (``run <id>: ...``), in order, each once."""
    named = [p.split(":", 1)[0].removeprefix("run ") for p in problems if p.startswith("run ")]
    return list(dict.fromkeys(named))


async def completed_twice(db: Database) -> list[str]:
    """No attempt of a node (per loop iteration) completed twice, whatever the takeovers and zombies."""
    key = (
        instance_logs.c.instance_id,
        instance_logs.c.node_id,
        instance_logs.c.iteration,
        instance_logs.c.node_attempt,
    )
    query = (
        sa.select(*key, sa.func.count())
        .where(instance_logs.c.event_type == "NODE_COMPLETED")
        .group_by(*key)
        .having(sa.func.count() > 1)
    )
    async with db.read() as conn:
        rows = (await conn.execute(query)).all()
    return [f"run {r[0]}: node {r[1]} iteration {r[2]!r} attempt {r[3]} completed {r[4]} times" for r in rows]


async def counted_completions(db: Database) -> dict[tuple[str, str, str], tuple[int, Any]]:
    """(run, node, iteration) -> (attempt, output) of the completion that counts: the newest attempt's. An
    older attempt's is a zombie's late result, recorded and used nowhere (storage/log_fold.py ``superseded``)."""
    logs = instance_logs.c
    query = sa.select(logs.instance_id, logs.node_id, logs.iteration, logs.node_attempt, logs.payload).where(
        logs.event_type == "NODE_COMPLETED"
    )
    counted: dict[tuple[str, str, str], tuple[int, Any]] = {}
    async with db.read() as conn:
        for run_id, node_id, iteration, attempt, payload in await conn.execute(query):
            key = (run_id, node_id, iteration)
            if key not in counted or attempt > counted[key][0]:
                counted[key] = (attempt, (payload or {}).get("output"))
    return counted


async def late_results(db: Database) -> int:
    """How many completions a newer attempt replaced (a worker that woke up after its node was taken over)."""
    query = sa.select(sa.func.count()).where(instance_logs.c.event_type == "NODE_COMPLETED")
    async with db.read() as conn:
        rows = int((await conn.execute(query)).scalar_one())
    return rows - len(await counted_completions(db))


def tickets_disagree(
    runs: list[Mapping[str, Any]], counted: Mapping[tuple[str, str, str], tuple[int, Any]], workflow_id: str
) -> list[str]:
    """The diamond's ``http`` node gets a new ticket on every call, so a node taken over has two outputs: the
    run must go on with, and end showing, the ticket of the completion that counts (never a zombie's)."""
    problems = []
    for r in runs:
        if r["status"] == "COMPLETED" and r["workflow_id"] == workflow_id:
            attempt, output = counted[(r["id"], "d", "")]
            if r["output"]["ticket"] != output["body"]["ticket"]:
                problems.append(
                    f"run {r['id']}: output ticket {r['output']['ticket']}, node d's (attempt {attempt}) "
                    f"{output['body']['ticket']}"
                )
    return problems


async def leftovers(
    db: Database, runs: list[Mapping[str, Any]], in_degree: Mapping[str, Mapping[str, int]]
) -> list[str]:
    """No job or lease outlives its run; every barrier of a COMPLETED run counted each incoming edge exactly
    once; every loop of a COMPLETED run finished each item; every wait of a COMPLETED run was resumed."""
    completed = {r["id"]: r["workflow_id"] for r in runs if r["status"] == "COMPLETED"}
    problems: list[str] = []
    async with db.read() as conn:
        for job in await conn.execute(sa.select(node_jobs.c.instance_id, node_jobs.c.node_id, node_jobs.c.lease_owner)):
            problems.append(f"run {job[0]}: a job of {job[1]} is left (lease owner {job[2]})")
        for b in await conn.execute(sa.select(join_barriers)):
            if b.instance_id in completed:
                expected = in_degree.get(completed[b.instance_id] or "", {}).get(b.node_id)
                if b.resolved_edges != expected or b.taken_edges > b.resolved_edges:
                    problems.append(
                        f"run {b.instance_id}: barrier of {b.node_id}{b.iteration and '@' + b.iteration} resolved "
                        f"{b.resolved_edges} of {expected} edges, took {b.taken_edges}"
                    )
        for s in await conn.execute(sa.select(loop_states)):
            if s.instance_id in completed and s.finished != s.item_count:
                problems.append(f"run {s.instance_id}: loop {s.node_id} finished {s.finished} of {s.item_count}")
        for w in await conn.execute(
            sa.select(wait_tokens.c.instance_id, wait_tokens.c.node_id, wait_tokens.c.resumed_at)
        ):
            if w.instance_id in completed and w.resumed_at is None:
                problems.append(f"run {w.instance_id}: wait {w.node_id} completed without being resumed")
    return problems


def outputs_differ(runs: list[Mapping[str, Any]], baseline: Mapping[tuple[str | None, str], Any]) -> list[str]:
    problems = []
    for r in runs:
        if r["status"] != "COMPLETED":
            continue
        key = input_key(r["workflow_id"], r["input"])
        if key not in baseline:
            problems.append(f"run {r['id']}: no run without faults of workflow {key[0]} with input {key[1]}")
        elif without_tickets(r["output"]) != without_tickets(baseline[key]):
            problems.append(f"run {r['id']}: output {r['output']!r} but {baseline[key]!r} without faults")
    return problems


def without_tickets(value: Any) -> Any:
    """An output without the partner's tickets (new on every call, so unlike any other run's by design)."""
    if isinstance(value, dict):
        return {k: without_tickets(v) for k, v in value.items() if k != "ticket"}
    if isinstance(value, list):
        return [without_tickets(v) for v in value]
    return value


def not_completed(runs: list[Mapping[str, Any]]) -> list[str]:
    """The workload has no reason to fail: a FAILED or CANCELLED run is a fault that leaked into a result."""
    return [f"run {r['id']} {r['status']}: {r['error']}" for r in runs if r["status"] in {"FAILED", "CANCELLED"}]


def browser_disagrees(
    messages: Mapping[str, list[tuple[str, dict[str, Any]]]],
    api_runs: Mapping[str, dict[str, Any]],
    counted: Mapping[tuple[str, str, str], tuple[int, Any]],
) -> list[str]:
    """What a browser on a run's page was sent agrees with the log: each COMPLETED node update is the
    completion that counts (its attempt, its output: never a zombie's late one); each final run status says
    what the run ended as; and the page, folded from its snapshots and updates in arrival order, ends showing
    what the API shows."""
    problems: list[str] = []
    for run_id, received in messages.items():
        logged = {(node, iteration): found for (run, node, iteration), found in counted.items() if run == run_id}
        problems += page_disagrees(run_id, received, logged, api_runs[run_id])
    return problems


def page_disagrees(
    run_id: str, received: list[tuple[str, dict[str, Any]]], logged: Mapping[tuple[str, str], Any], run: dict[str, Any]
) -> list[str]:
    problems = []
    for event, data in received:
        if event == "workflow_status_update":
            if data["status"] in TERMINAL and (data["status"], data["output"]) != (run["status"], run["output"]):
                problems.append(f"run {run_id}: the browser was told {data['status']} {data['output']!r}")
        elif event == "workflow_node_update":
            where = (data["nodeID"], data["iteration"])
            shown_whole = data["status"] == "COMPLETED" and data["outputTruncated"] is None
            if shown_whole and logged.get(where) != (data["attempt"], data["output"]):
                problems.append(
                    f"run {run_id}: the browser saw {where} complete as {data!r}, the log {logged.get(where)!r}"
                )
    status, nodes = page_shows(received)
    api = shown_statuses(run["nodes"])
    if status != run["status"]:
        problems.append(f"run {run_id}: the page ends showing the run {status}, the API {run['status']}")
    for where in sorted(set(nodes) | set(api)):
        if where in api and nodes.get(where) != api[where]:
            problems.append(f"run {run_id}: the page ends showing {where} {nodes.get(where)}, the API {api[where]}")
    return problems


def page_shows(received: list[tuple[str, dict[str, Any]]]) -> tuple[str | None, dict[tuple[str, str], str]]:
    """The run's status and each (node, iteration)'s, as the page shows them once it folded its snapshots and
    updates in arrival order. A delay a snapshot showed WAITING is shown COMPLETED once a successor it holds
    moves: the page's rule (frontend/src/runs/delays.ts), held equal by the cases both are tested on
    (frontend/src/runs/delayHolds.cases.json)."""
    status: str | None = None
    nodes: dict[tuple[str, str], str] = {}
    held: dict[tuple[str, str], tuple[str, str]] = {}
    for event, data in received:
        if event == "workflow_run_snapshot":
            status = data["status"]
            nodes = shown_statuses(data["nodes"])
            held = held_by_delays(data["nodes"])
        elif event == "workflow_status_update":
            status = data["status"]
        else:
            where = (data["nodeID"], data["iteration"])
            nodes[where] = data["status"]
            delay = held.pop(where, None)
            if delay is not None and data["status"] in DELAY_ENDERS and nodes.get(delay) == "WAITING":
                nodes[delay] = "COMPLETED"
    return status, nodes


DELAY_ENDERS = {"RUNNING", "COMPLETED", "FAILED", "SKIPPED", "CANCELLED", "RETRYING"}
"""A held successor moving in any of these ways ends its delay's wait (frontend/src/runs/delays.ts ``MOVES``)."""


def held_by_delays(nodes: Mapping[str, Any]) -> dict[tuple[str, str], tuple[str, str]]:
    """(successor, iteration) -> (delay, iteration), from a snapshot: a delay WAITING names the successors it
    ``holds``, and the page shows it COMPLETED once one of them moves."""
    held: dict[tuple[str, str], tuple[str, str]] = {}
    for node_id, state in nodes.items():
        scopes = [("", state), *(state.get("iterations") or {}).items()]
        for iteration, view in scopes:
            if view.get("status") == "WAITING":
                for successor in view.get("holds") or []:
                    held[(successor, iteration)] = (node_id, iteration)
    return held


def shown_statuses(nodes: Mapping[str, Any]) -> dict[tuple[str, str], str]:
    """(node, iteration) -> status, from a snapshot's or the API's ``nodes``: a loop body node by iteration
    (its own status the page derives from them, so it is not compared), every other node as itself."""
    shown: dict[tuple[str, str], str] = {}
    for node_id, state in nodes.items():
        iterations = state.get("iterations") or {}
        if not iterations:
            shown[(node_id, "")] = state["status"]
        for iteration, view in iterations.items():
            shown[(node_id, iteration)] = view["status"]
    return shown


def count_by(values: list[str]) -> Counter[str]:
    return Counter(values)


async def completions_of(db: Database, node_id: str) -> int:
    query = sa.select(sa.func.count()).where(
        instance_logs.c.event_type == "NODE_COMPLETED", instance_logs.c.node_id == node_id
    )
    async with db.read() as conn:
        return int((await conn.execute(query)).scalar_one())
