"""The python node handler on a real sandbox pool."""

from __future__ import annotations

import pytest

from flowdeck.domain.errors import ConfigIssue, NodeError
from flowdeck.handlers.base import HandlerResult, NodeHelpers
from flowdeck.handlers.python_code import PythonCodeHandler
from flowdeck.sandbox.messages import SandboxTimeoutError
from flowdeck.sandbox.pool import SandboxPool

pytestmark = pytest.mark.asyncio(loop_scope="module")


def helpers(timeout: float = 5.0) -> NodeHelpers:
    return NodeHelpers(
        instance_id="run-1", tenant_id="t-1", workflow_id="wf-1", node_id="score", iteration="", attempt=1,
        timeout_seconds=timeout, is_test=True,
    )  # fmt: skip


async def test_contract(pool: SandboxPool) -> None:
    handler = PythonCodeHandler(pool)
    assert handler.type_name == "python"
    assert handler.output_handles({}) == ("success", "error")
    assert handler.template_fields == ()


@pytest.mark.parametrize(
    ("config", "messages"),
    [
        ({"code": "return 1"}, []),
        ({}, ["code must be a string"]),
        ({"code": 42}, ["code must be a string"]),
        ({"code": ""}, ["code must not be empty"]),
        ({"code": "return ("}, ["SyntaxError: '(' was never closed (line 1)"]),
    ],
)
async def test_config_issues(pool: SandboxPool, config: dict[str, object], messages: list[str]) -> None:
    issues = PythonCodeHandler(pool).config_issues(config)
    assert issues == [ConfigIssue(path="config.code", message=message) for message in messages]


async def test_execute_returns_output_and_logs(pool: SandboxPool) -> None:
    handler = PythonCodeHandler(pool)
    config = {"code": "print('scoring')\nreturn {'value': len(ctx['input']['items'])}"}
    result = await handler.execute(config, {"input": {"items": [1, 2]}}, helpers())
    assert result == HandlerResult(output={"value": 2}, next_handle="success", logs="scoring\n")


async def test_execute_raises_node_errors(pool: SandboxPool) -> None:
    handler = PythonCodeHandler(pool, memory_mb=64)
    with pytest.raises(NodeError, match=r"ZeroDivisionError: division by zero \(line 1\)"):
        await handler.execute({"code": "return 1 / 0"}, {}, helpers())
    with pytest.raises(NodeError) as caught:
        await handler.execute({"code": ""}, {}, helpers())
    assert caught.value.retryable is False


async def test_execute_uses_the_node_timeout(pool: SandboxPool) -> None:
    with pytest.raises(SandboxTimeoutError, match=r"0\.5 s"):
        await PythonCodeHandler(pool).execute({"code": "while True:\n    pass"}, {}, helpers(timeout=0.5))
