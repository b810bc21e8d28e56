"""``ctx.label(name, value)`` in a python node: real sandbox processes, the labels stored with the node's
completion and searchable; past the limits the node fails naming the limit (on SQLite and PostgreSQL)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from itertools import pairwise

import pytest

from flowdeck.domain.labels import LabelLimits
from flowdeck.engine.engine import Engine
from flowdeck.handlers.python_code import PythonCodeHandler
from flowdeck.handlers.registry import HandlerRegistry, builtin_handlers
from flowdeck.sandbox.pool import SandboxPool
from flowdeck.storage.database import Database
from flowdeck.storage.run_queries import RunFilter, RunQueries
from tests.support.graphs import definition, edge, end, node


@pytest.fixture
async def sandbox() -> AsyncIterator[SandboxPool]:
    pool = SandboxPool(1)
    await pool.start()
    yield pool
    await pool.close()


@pytest.fixture
async def python_engine(db: Database, sandbox: SandboxPool) -> AsyncIterator[Engine]:
    registry = HandlerRegistry([*builtin_handlers(), PythonCodeHandler(sandbox)])
    engine = Engine(db, registry, poll_interval=0.05, label_limits=LabelLimits(max_labels=3, max_value_chars=20))
    await engine.start()
    yield engine
    await engine.stop()


def python(node_id: str, code: str) -> dict:
    return node(node_id, "python", config={"code": code})


async def production_run(engine: Engine, tenant_id: str, *codes: str, labels: dict[str, str] | None = None) -> str:
    ids = [f"p{i}" for i in range(len(codes))]
    nodes = [node("start", "start"), *(python(i, c) for i, c in zip(ids, codes, strict=True)), end()]
    chain = ["start", *ids, "end"]
    edges = [edge(a, b, None if a == "start" else "success") for a, b in pairwise(chain)]
    workflow = await engine.create_workflow(tenant_id, definition(nodes, edges))
    run_id = await engine.start_workflow_run(tenant_id, workflow.id, {"who": "acme"}, labels=labels)
    await engine.wait_for_run(run_id, 20)
    return run_id


async def test_a_python_node_labels_its_run(python_engine: Engine) -> None:
    tenant_id = await python_engine.tenants.ensure("acme")
    queries = RunQueries(python_engine.db, python_engine.state)
    run_id = await production_run(
        python_engine,
        tenant_id,
        "ctx.label('customer', ctx['input']['who'])\nreturn {'ok': True}",
        "ctx.label('customer', 'acme-2')\nctx.label('step', 'two')\nreturn ctx['p0']",
        labels={"source": "api"},
    )
    run = await queries.get_run(tenant_id, run_id)
    assert run is not None and run.status.value == "COMPLETED", run
    assert (await queries.labels_of([run_id]))[run_id] == {"customer": "acme-2", "source": "api", "step": "two"}
    found, _ = await queries.list_runs(tenant_id, RunFilter(labels=(("step", "two"),)), None, 10)
    assert [r.id for r in found] == [run_id]


async def test_a_python_node_past_the_run_s_label_limit_fails_naming_it(python_engine: Engine) -> None:
    tenant_id = await python_engine.tenants.ensure("acme")
    queries = RunQueries(python_engine.db, python_engine.state)
    run_id = await production_run(
        python_engine, tenant_id, "ctx.label('c', 'x')\nctx.label('d', 'y')\nreturn 1", labels={"a": "1", "b": "2"}
    )
    run = await queries.get_run(tenant_id, run_id)
    assert run is not None and run.status.value == "FAILED"
    assert "at most 3 labels (FLOWDECK_MAX_RUN_LABELS)" in (run.error or "") and "p0" in (run.error or "")
    assert (await queries.labels_of([run_id]))[run_id] == {"a": "1", "b": "2"}


@pytest.mark.parametrize(
    ("code", "words"),
    [
        ("ctx.label('bad name', 'x')", "A-Z a-z 0-9"),
        ("ctx.label('n', 'x' * 21)", "at most 20 characters (FLOWDECK_MAX_LABEL_CHARS)"),
        ("ctx.label('n', 5)", "must be a string"),
        ("for i in range(4):\n    ctx.label(f'n{i}', 'x')", "at most 3 labels (FLOWDECK_MAX_RUN_LABELS)"),
    ],
)
async def test_a_bad_label_is_a_node_error_naming_the_line(python_engine: Engine, code: str, words: str) -> None:
    tenant_id = await python_engine.tenants.ensure("acme")
    queries = RunQueries(python_engine.db, python_engine.state)
    run_id = await production_run(python_engine, tenant_id, code + "\nreturn 1")
    run = await queries.get_run(tenant_id, run_id)
    assert run is not None and run.status.value == "FAILED"
    assert words in (run.error or "") and "line" in (run.error or "")
    assert await queries.labels_of([run_id]) == {}


async def test_a_deleted_test_run_takes_its_labels_with_it(python_engine: Engine) -> None:
    tenant_id = await python_engine.tenants.ensure("acme")
    queries = RunQueries(python_engine.db, python_engine.state)
    d = definition(
        [node("start", "start"), python("p", "ctx.label('draft', 'yes')\nreturn 1"), end()],
        [edge("start", "p"), edge("p", "end", "success")],
    )
    run_id = await python_engine.start_test_run(tenant_id, d)
    await python_engine.wait_for_run(run_id, 20)
    assert (await queries.labels_of([run_id]))[run_id] == {"draft": "yes"}
    assert await python_engine.delete_test_run(run_id)
    assert await queries.labels_of([run_id]) == {}
    found, _ = await queries.list_runs(tenant_id, RunFilter(labels=(("draft", "yes"),)), None, 10)
    assert found == []
