"""The ``dataQuery`` handler's contract and config checks."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from flowdeck.handlers.data_query import DataQueryHandler
from flowdeck.queries.engine import QueryEngine
from flowdeck.queries.secrets import SecretBox
from flowdeck.queries.store import DataSourceStore
from flowdeck.storage.database import Database


@pytest.fixture
async def handler(tmp_path: Path) -> Any:
    db = Database(f"sqlite+aiosqlite:///{tmp_path / 'f.db'}")
    yield DataQueryHandler(DataSourceStore(db, SecretBox(None)), QueryEngine())
    await db.dispose()


async def test_contract(handler: DataQueryHandler) -> None:
    assert handler.type_name == "dataQuery"
    assert handler.output_handles({}) == ("success", "error")
    assert handler.template_fields == ("args",)


@pytest.mark.parametrize(
    ("config", "expected"),
    [
        ({"queryId": "q-1", "args": {"id": "{{ ctx.input.id }}", "n": 3}}, []),
        ({"queryId": "q-1"}, []),
        ({}, [("config.queryId", "queryId must be the id of a saved query")]),
        (
            {"queryId": "  ", "args": []},
            [
                ("config.queryId", "queryId must be the id of a saved query"),
                ("config.args", "args must be an object of argument names to values or templates"),
            ],
        ),
        (
            {"queryId": "q", "args": {"a-b": 1}},
            [("config.args.a-b", "an argument name is a letter or _ then letters, digits, _")],
        ),
    ],
)
async def test_config_issues(handler: DataQueryHandler, config: dict[str, Any], expected: list[Any]) -> None:
    assert [(i.path, i.message) for i in handler.config_issues(config)] == expected
