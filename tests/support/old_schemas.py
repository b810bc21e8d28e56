"""Databases at earlier schema revisions, holding the rows an older Flowdeck would have written.

The rows are made once by the real engine on the latest schema (real definitions: the shipped
example, delays, a diamond join, loops, sub-workflows; finished, failed and unfinished runs; a
widget, a data source with encrypted secrets, an API token, a webhook, a notification secret), then
written into a database built by Alembic at an earlier revision with plain INSERTs of the columns
that revision has. A feature is written only from the revision that made its tables (``SINCE``):
at 0001 there are no loops, no accounts and no child runs, as there were none then. Columns added
later with a default (``node_jobs.tenant_id``, ``instances.depth``) are left to the migrations, as
the old versions left them.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from alembic.script import ScriptDirectory

from flowdeck.accounts.credentials import hash_secret, new_embed_token
from flowdeck.accounts.passwords import PasswordService
from flowdeck.accounts.rate_limit import LoginRateLimiter
from flowdeck.accounts.service import AccountsService
from flowdeck.domain.statuses import TERMINAL_RUN_STATUSES
from flowdeck.engine.engine import Engine
from flowdeck.handlers.python_code import PythonCodeHandler
from flowdeck.handlers.registry import HandlerRegistry, builtin_handlers
from flowdeck.notifications.secrets import NotificationSecrets
from flowdeck.queries.secrets import SecretBox
from flowdeck.queries.store import DataSourceStore
from flowdeck.sandbox.pool import SandboxPool
from flowdeck.storage.database import Database
from flowdeck.storage.migrate import alembic_config
from flowdeck.storage.schema import metadata
from flowdeck.storage.tables import instances
from flowdeck.storage.webhooks import WebhookStore
from flowdeck.storage.widgets import WidgetFields, WidgetStore
from tests.support.graphs import definition, edge, end, node

ROOT = Path(__file__).resolve().parents[2]
SECRET_KEY = "upgrade-test-secret-key"
_SCRIPTS = ScriptDirectory.from_config(alembic_config("sqlite://"))
REVISIONS: tuple[str, ...] = tuple(reversed([script.revision for script in _SCRIPTS.walk_revisions()]))
"""Every revision in the versions folder, oldest first (a new migration joins by itself)."""
HEAD = REVISIONS[-1]

SINCE = {"runs": "0001", "loops": "0002", "data": "0003", "accounts": "0004", "widgets": "0005", "children": "0011"}
"""The revision that made each feature's tables: its rows are written from that revision on."""


STOPPED_AGO = 2.0
"""The old version stopped this many seconds before the upgrade (the seed's 2 s delays are due by then)."""


def at_or_after(revision: str, since: str) -> bool:
    return REVISIONS.index(revision) >= REVISIONS.index(since)


@dataclass
class Seed:
    """What the engine wrote, and what a test needs to check it after an upgrade."""

    tenant_id: str = ""
    rows: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    feature_of_workflow: dict[str, str] = field(default_factory=dict)
    status: dict[str, str] = field(default_factory=dict)
    """Every run's status when the rows were taken (unfinished ones are not in a terminal status)."""
    data_source_id: str = ""
    data_secrets: dict[str, str] = field(default_factory=dict)
    api_token: str = ""
    webhook_workflow: str = ""
    webhook_secret: str = ""
    notification_workflow: str = ""
    notification_key: str = ""
    widget_id: str = ""
    embed_token: str = ""
    taken_at: float = 0.0
    """When the rows were taken: their times are moved by ``write_seed`` as if the old version stopped just now."""

    def feature_of_run(self, run_id: str) -> str:
        run = next(row for row in self.rows["instances"] if row["id"] == run_id)
        return self.feature_of_workflow[run["workflow_id"]]

    def runs_at(self, revision: str) -> list[str]:
        return [run_id for run_id in self.status if at_or_after(revision, SINCE[self.feature_of_run(run_id)])]

    def unfinished_at(self, revision: str) -> list[str]:
        terminal = {status.value for status in TERMINAL_RUN_STATUSES}
        return [run_id for run_id in self.runs_at(revision) if self.status[run_id] not in terminal]


def _python(node_id: str, code: str, **fields: Any) -> dict[str, Any]:
    return node(node_id, "python", config={"code": code}, **fields)


TRIAGE = json.loads((ROOT / "docs" / "examples" / "order-triage.json").read_text())
BROKEN = definition(
    [node("start", "start"), _python("lookup", "return {'v': ctx['input']['missing']}"), end()],
    [edge("start", "lookup"), edge("lookup", "end", "success")],
)
SLOW = definition(
    [
        node("start", "start"),
        node("nap", "delay", config={"seconds": 2}),
        _python("double", "return {'n': ctx['input']['n'] * 2}"),
        end(params={"n": "{{ ctx.double.n }}"}),
    ],
    [edge("start", "nap"), edge("nap", "double"), edge("double", "end", "success")],
)
DIAMOND = definition(
    [
        node("start", "start"),
        _python("quick", "return {'a': 1}"),
        node("nap", "delay", config={"seconds": 2}),
        _python("join", "return {'both': True}", joinMode="all"),
        end(params={"both": "{{ ctx.join.both }}"}),
    ],
    [edge("start", "quick"), edge("start", "nap"), edge("quick", "join", "success"), edge("nap", "join"),
     edge("join", "end", "success")],
)  # fmt: skip


def _loop(body_delay: float) -> dict[str, Any]:
    return definition(
        [
            node("start", "start"),
            node("each", "loop", config={"items": "{{ ctx.input.items }}", "concurrency": 1}),
            node("nap", "delay", config={"seconds": body_delay}),
            _python("work", "return {'ok': True}"),
            end(params={"count": "{{ ctx.each.count }}"}),
        ],
        [edge("start", "each"), edge("each", "nap", "loop"), edge("nap", "work"), edge("each", "end", "done")],
    )


def _caller(child_id: str) -> dict[str, Any]:
    return definition(
        [node("start", "start"), node("call", "workflow", config={"workflowId": child_id, "input": {"n": 21}}), end()],
        [edge("start", "call"), edge("call", "end", "success")],
    )


async def _until(check: Callable[[], Awaitable[bool]], what: str, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while not await check():
        if time.monotonic() > deadline:
            raise AssertionError(f"never: {what}")
        await asyncio.sleep(0.02)


async def _logged(engine: Engine, run_id: str, event_type: str, node_id: str) -> bool:
    return any(r.event_type == event_type and r.node_id == node_id for r in await engine.state.read_log(run_id))


async def _child_napping(engine: Engine, parent_id: str) -> bool:
    async with engine.db.read() as conn:
        called = sa.select(instances.c.id).where(instances.c.parent_instance_id == parent_id)
        child = (await conn.execute(called)).first()
    return child is not None and await _logged(engine, child.id, "NODE_COMPLETED", "nap")


async def make_seed(database_url: str) -> Seed:
    """Run the workloads on a fresh database at the latest schema and take every row it holds."""
    db = Database(database_url)
    await db.create_all()
    seed = Seed()
    sandbox = SandboxPool(1)
    await sandbox.start()
    registry = HandlerRegistry([*builtin_handlers(), PythonCodeHandler(sandbox)])
    engine = Engine(db, registry, lease_seconds=2.0, poll_interval=0.05)
    await engine.start()
    try:
        await _workloads(engine, seed)
        await engine.stop(grace=10)
        await _other_rows(db, seed)
        seed.rows = await _rows(db)
        seed.status = {row["id"]: row["status"] for row in seed.rows["instances"]}
        seed.taken_at = time.time()
    finally:
        await engine.stop()
        await sandbox.close()
        await db.dispose()
    return seed


async def _workloads(engine: Engine, seed: Seed) -> None:
    tenant = seed.tenant_id = await engine.tenants.ensure("acme")

    async def workflow(graph: dict[str, Any], feature: str) -> str:
        workflow_id = (await engine.create_workflow(tenant, graph)).id
        seed.feature_of_workflow[workflow_id] = feature
        return workflow_id

    async def finished(workflow_id: str, run_input: Any, status: str = "COMPLETED") -> str:
        run_id = await engine.start_workflow_run(tenant, workflow_id, run_input)
        run = await engine.wait_for_run(run_id, 30)
        assert run.status.value == status, (run.status, run.error)
        return run_id

    triage = await workflow(TRIAGE, "runs")
    await finished(triage, {"items": [1, 2, 3, 4]})  # version 1
    second = {**TRIAGE, "description": "Scores an order and routes large ones (three items make a large one)"}
    await engine.save_workflow(tenant, triage, 1, second)
    await finished(triage, {"items": [1]})  # version 2
    await finished(await workflow(BROKEN, "runs"), {}, "FAILED")
    slow, diamond = await workflow(SLOW, "runs"), await workflow(DIAMOND, "runs")
    loop_done, loop_slow = await workflow(_loop(0), "loops"), await workflow(_loop(1), "loops")
    await finished(loop_done, {"items": [1, 2]})
    child_quick, child_slow = await workflow(SLOW, "children"), await workflow(SLOW, "children")
    await finished(child_quick, {"n": 1})  # a child workflow is also started on its own
    await finished(await workflow(_caller(child_quick), "children"), {})

    waiting = [await engine.start_workflow_run(tenant, slow, {"n": n}) for n in range(3)]
    half = await engine.start_workflow_run(tenant, diamond, {})
    looping = await engine.start_workflow_run(tenant, loop_slow, {"items": [1, 2, 3]})
    calling = await engine.start_workflow_run(tenant, await workflow(_caller(child_slow), "children"), {})
    for run_id in waiting:
        await _until(lambda r=run_id: _logged(engine, r, "NODE_COMPLETED", "nap"), "a delay started")
    await _until(lambda: _logged(engine, half, "NODE_COMPLETED", "quick"), "one branch of the diamond ended")
    await _until(lambda: _logged(engine, looping, "NODE_COMPLETED", "work"), "an iteration ended")
    await _until(lambda: _child_napping(engine, calling), "the child run is in its delay")
    await engine.stop(grace=10)  # runs mid-way: delays pending, a barrier half resolved, a loop, a child
    await engine.start_workflow_run(tenant, triage, {"items": [1, 2]})  # queued, never claimed


async def _other_rows(db: Database, seed: Seed) -> None:
    box = SecretBox(SECRET_KEY)
    triage = next(w for w, feature in seed.feature_of_workflow.items() if feature == "runs")
    seed.data_secrets = {"Authorization": "Bearer s3cr3t-value", "X-Api-Key": "k-42"}
    source = await DataSourceStore(db, box).create_source(
        seed.tenant_id,
        name="crm",
        kind="http",
        config={"baseUrl": "https://crm.example.test"},
        secrets=seed.data_secrets,
    )
    seed.data_source_id = source.id
    accounts = AccountsService(db, PasswordService(), LoginRateLimiter(db))
    await accounts.create_user("ops@acme.test", "acme", "a long password 1")
    seed.api_token = (await accounts.create_token_for_email("ops@acme.test", "upgrade test"))[1]
    now = time.time()
    fields = WidgetFields(triage, "Score", "metric", "replay", {"valuePath": "score", "label": "Score"}, None)
    widget = await WidgetStore(db).create(seed.tenant_id, fields, now)
    assert widget is not None
    seed.widget_id = widget.id
    seed.embed_token, prefix = new_embed_token()
    await WidgetStore(db).create_token(widget, hash_secret(seed.embed_token), prefix, now, now + 30 * 86400)
    seed.webhook_workflow = seed.notification_workflow = triage
    seed.webhook_secret = "fdw_upgrade-test-webhook-secret"
    assert await WebhookStore(db).set_secret(seed.tenant_id, triage, hash_secret(seed.webhook_secret), now)
    seed.notification_key = await NotificationSecrets(db, box).rotate(seed.tenant_id, triage)


async def _rows(db: Database) -> dict[str, list[dict[str, Any]]]:
    rows: dict[str, list[dict[str, Any]]] = {}
    async with db.read() as conn:
        for table in metadata.sorted_tables:
            order = list(table.primary_key.columns)
            rows[table.name] = [dict(r._mapping) for r in await conn.execute(sa.select(table).order_by(*order))]
    return rows


def _feature_of_table(table: str) -> str | None:
    """The feature whose rows a table holds, when the table is not keyed by run or workflow."""
    return {
        "data_sources": "data",
        "saved_queries": "data",
        "users": "accounts",
        "api_tokens": "accounts",
        "widgets": "widgets",
        "embed_tokens": "widgets",
    }.get(table)


def write_seed(connection: sa.Connection, seed: Seed, revision: str) -> int:
    """INSERT the seed's rows that ``revision``'s schema can hold, with its columns; returns the row count."""
    present = sa.inspect(connection)
    tables = set(present.get_table_names())
    runs = set(seed.runs_at(revision))
    workflows = {w for w, feature in seed.feature_of_workflow.items() if at_or_after(revision, SINCE[feature])}
    written = 0
    for table in metadata.sorted_tables:
        if table.name not in tables or not seed.rows.get(table.name):
            continue
        columns = {column["name"] for column in present.get_columns(table.name)}
        generated = table.autoincrement_column
        keep = [c.name for c in table.columns if c.name in columns and c is not generated]
        chosen = [row for row in seed.rows[table.name] if _belongs(table.name, row, runs, workflows, revision)]
        times = {c.name for c in table.columns if isinstance(c.type, sa.Double)}  # epoch seconds, every one
        shift = time.time() - seed.taken_at - STOPPED_AGO  # timeouts and leases run from when the old version stopped
        if chosen:
            values = [
                {name: row[name] + shift if name in times and row[name] is not None else row[name] for name in keep}
                for row in chosen
            ]
            connection.execute(table.insert(), values)
            written += len(chosen)
    return written


def _belongs(table: str, row: dict[str, Any], runs: set[str], workflows: set[str], revision: str) -> bool:
    if table == "instances":
        return row["id"] in runs
    if "instance_id" in row:
        return row["instance_id"] in runs
    if table == "workflows":
        return row["id"] in workflows
    if "workflow_id" in row:
        return row["workflow_id"] in workflows
    feature = _feature_of_table(table)
    return feature is None or at_or_after(revision, SINCE[feature])
