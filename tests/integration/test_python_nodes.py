"""The python node through the engine: real sandbox processes, real runs, on SQLite and PostgreSQL."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from flowdeck.engine.engine import DefinitionInvalidError, Engine
from flowdeck.handlers.python_code import PythonCodeHandler
from flowdeck.handlers.registry import HandlerRegistry, builtin_handlers
from flowdeck.sandbox.pool import SandboxPool
from flowdeck.storage.database import Database
from tests.support.graphs import definition, edge, end, node
from tests.support.runs import run_to_end


@pytest.fixture
async def sandbox() -> AsyncIterator[SandboxPool]:
    pool = SandboxPool(2)
    await pool.start()
    yield pool
    await pool.close()


@pytest.fixture
async def python_engine(db: Database, sandbox: SandboxPool) -> AsyncIterator[Engine]:
    engine = Engine(db, HandlerRegistry([*builtin_handlers(), PythonCodeHandler(sandbox)]), poll_interval=0.05)
    await engine.start()
    yield engine
    await engine.stop()


def python(node_id: str, code: str, **fields: object) -> dict:
    return node(node_id, "python", config={"code": code}, **fields)


async def test_values_flow_through_python_nodes_and_prints_become_logs(python_engine: Engine) -> None:
    tenant_id = await python_engine.tenants.ensure("acme")
    d = definition(
        [
            node("start", "start"),
            python(
                "total", "print('summing', len(ctx['input']['prices']))\nreturn {'sum': sum(ctx['input']['prices'])}"
            ),
            python("vat", "import math\nreturn {'gross': math.floor(ctx['total']['sum'] * 1.2)}"),
            end(params={"gross": "{{ ctx.vat.gross }}"}),
        ],
        [edge("start", "total"), edge("total", "vat", "success"), edge("vat", "end", "success")],
    )
    outcome = await run_to_end(python_engine, tenant_id, d, {"prices": [10, 20, 30]})
    assert outcome.run.status.value == "COMPLETED"
    assert outcome.run.output == {"gross": 72}
    assert outcome.nodes["total"].logs == "summing 3\n"


async def test_a_runtime_error_is_retried_then_follows_the_error_edge(python_engine: Engine) -> None:
    tenant_id = await python_engine.tenants.ensure("acme")
    d = definition(
        [
            node("start", "start"),
            python("divide", "x = 0\nreturn {'q': 1 / x}", retry={"maxAttempts": 2, "backoffSeconds": 0.05}),
            end("failed", {"why": "{{ ctx.divide.error.message }}"}),
        ],
        [edge("start", "divide"), edge("divide", "failed", "error")],
    )
    outcome = await run_to_end(python_engine, tenant_id, d)
    assert outcome.run.status.value == "COMPLETED"
    assert outcome.run.output == {"why": "ZeroDivisionError: division by zero (line 2)"}
    assert outcome.count("NODE_STARTED", "divide") == 2


async def test_a_node_past_its_timeout_is_stopped_and_retried(python_engine: Engine) -> None:
    tenant_id = await python_engine.tenants.ensure("acme")
    d = definition(
        [
            node("start", "start"),
            python("spin", "while True:\n    pass", timeoutSeconds=0.5, retry={"maxAttempts": 2, "backoffSeconds": 0}),
            end(),
        ],
        [edge("start", "spin"), edge("spin", "end", "success")],
    )
    outcome = await run_to_end(python_engine, tenant_id, d)
    assert outcome.run.status.value == "FAILED"
    assert outcome.count("NODE_FAILED", "spin") == 2
    assert "timed out" in (outcome.run.error or "")


async def test_code_that_cannot_compile_is_refused_at_save_naming_the_node(python_engine: Engine) -> None:
    tenant_id = await python_engine.tenants.ensure("acme")
    d = definition(
        [node("start", "start"), python("evil", "return ().__class__.__mro__"), end()],
        [edge("start", "evil"), edge("evil", "end", "success")],
    )
    with pytest.raises(DefinitionInvalidError) as refused:
        await python_engine.create_workflow(tenant_id, d)
    errors = [p for p in refused.value.problems if p.severity == "error"]
    assert {(p.code, p.node_id, p.path) for p in errors} == {("invalid_config", "evil", "config.code")}
    assert any("__class__" in p.message and "(line 1)" in p.message for p in errors)
