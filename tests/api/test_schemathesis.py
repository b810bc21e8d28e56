"""Property-based fuzzing of the OpenAPI document (schemathesis): no input gets a 5xx, on SQLite and PostgreSQL.

The app runs in its own thread and event loop (schemathesis calls it synchronously over HTTP). The
examples per operation are bounded so the whole file stays around 20 s.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, settings
from schemathesis.checks import not_a_server_error

from flowdeck.api.config import ApiConfig
from flowdeck.app import build_app
from flowdeck.settings import Settings
from flowdeck.storage.database import Database
from tests.api.conftest import serve

MAX_EXAMPLES = 12


class LiveApi:
    """The whole app served on 127.0.0.1 from a background thread, with one account."""

    def __init__(self, database_url: str, tmp_path: Path) -> None:
        self.database_url = database_url
        self.tmp_path = tmp_path
        self.url = ""
        self.token = ""
        self._ready = threading.Event()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._main, name="schemathesis-api", daemon=True)

    def __enter__(self) -> LiveApi:
        self._thread.start()
        if not self._ready.wait(30) or self._error is not None:
            raise RuntimeError("the API did not start") from self._error
        return self

    def __exit__(self, *_: object) -> None:
        if self._loop is not None and self._stop is not None:
            self._loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(30)

    def _main(self) -> None:
        try:
            asyncio.run(self._serve())
        except BaseException as exc:  # reported to the test thread
            self._error = exc
            self._ready.set()

    async def _serve(self) -> None:
        self._loop, self._stop = asyncio.get_running_loop(), asyncio.Event()
        db = Database(self.database_url)
        await db.create_all()
        try:
            async with serve(db, self.tmp_path) as server:
                account = await server.account("fuzz@fuzz.test", "fuzz")
                await account.client.aclose()
                self.url, self.token = server.url, account.token
                self._ready.set()
                await self._stop.wait()
        finally:
            await db.dispose()


@pytest.fixture(scope="module", params=["sqlite", "postgres"])
def live_api(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveApi]:
    tmp = tmp_path_factory.mktemp("fuzz")
    url = (
        f"sqlite+aiosqlite:///{tmp / 'fuzz.db'}"
        if request.param == "sqlite"
        else request.getfixturevalue("postgres_url")
    )
    with LiveApi(str(url), tmp) as api:
        yield api


def _openapi_document() -> dict[str, Any]:
    """The document the app serves at /schema/openapi.json (built without starting the app)."""
    app = build_app(Settings(), ApiConfig())
    return app.api.openapi_schema.to_schema()


schema = schemathesis.openapi.from_dict(_openapi_document())


@schema.parametrize()
@settings(max_examples=MAX_EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
def test_no_input_gets_a_server_error(case: Any, live_api: LiveApi) -> None:
    case.call_and_validate(
        base_url=live_api.url, headers={"Authorization": f"Bearer {live_api.token}"}, checks=[not_a_server_error]
    )
