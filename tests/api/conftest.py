"""API fixtures: the whole app (REST + Socket.IO + engine) served by uvicorn on 127.0.0.1.

One server per test module and backend (SQLite, PostgreSQL), running the test node types (``step``);
each test gets users in tenants of its own, ``alice`` and ``mallory``, so tests cannot see each other
(which is tenant isolation at work). Modules using ``server`` run in a module-wide event loop.
"""

from __future__ import annotations

import asyncio
import ssl
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
import pytest_asyncio
import sqlalchemy as sa
import uvicorn
from argon2 import PasswordHasher

from flowdeck.accounts.rate_limit import LoginLimits
from flowdeck.api.config import ApiConfig
from flowdeck.app import Flowdeck, build_app
from flowdeck.engine.engine import Engine
from flowdeck.engine.run_limits import RunLimits
from flowdeck.handlers.http_request import HttpRequestHandler
from flowdeck.queries.engine import QueryEngine
from flowdeck.queries.secrets import SecretBox
from flowdeck.queries.service import DataService
from flowdeck.queries.store import DataSourceStore
from flowdeck.settings import Settings
from flowdeck.storage.database import Database
from flowdeck.storage.schema import metadata
from tests.support.handlers import make_test_registry

PASSWORD = "correct horse battery staple"
_TLS = ssl.create_default_context()  # made once: every new httpx client would build its own (50 ms)
FAST_HASHER = PasswordHasher(time_cost=1, memory_cost=64, parallelism=1)  # argon2id, cheap for tests


@dataclass(frozen=True)
class _Runtime:
    db: Database
    engine: Engine
    data: DataService


@dataclass
class Account:
    email: str
    tenant: str
    token: str
    client: httpx.AsyncClient
    """Authenticated with the API token."""


class _Uvicorn(uvicorn.Server):
    """uvicorn that stops as soon as it is told to (its own loop polls for that every 0.1 s)."""

    def __init__(self, config: uvicorn.Config) -> None:
        super().__init__(config)
        self.stopping = asyncio.Event()

    async def main_loop(self) -> None:
        await self.on_tick(0)
        await self.stopping.wait()


@dataclass
class Server:
    app: Flowdeck
    url: str
    uvicorn: uvicorn.Server

    @property
    def engine(self) -> Engine:
        return self.app.context.services.engine

    def client(self, **kwargs: Any) -> httpx.AsyncClient:
        return httpx.AsyncClient(base_url=self.url, timeout=10, verify=_TLS, **kwargs)

    async def account(self, email: str, tenant: str) -> Account:
        accounts = self.app.context.services.accounts
        await accounts.create_user(email, tenant, PASSWORD)
        _, token = await accounts.create_token_for_email(email, "tests")
        return Account(email, tenant, token, self.client(headers={"Authorization": f"Bearer {token}"}))


LOCAL_HTTP = ("127.0.0.1",)
"""``FLOWDECK_HTTP_ALLOW`` of the API tests (their HTTP servers listen on 127.0.0.1)."""


@asynccontextmanager
async def serve(
    db: Database,
    tmp_path: Path,
    *,
    queries: dict[str, Any] | None = None,
    settings: dict[str, Any] | None = None,
    **config: Any,
) -> AsyncIterator[Server]:
    """``queries``: the QueryEngine's settings (default: SQLite files under pytest's temporary directory,
    HTTP to 127.0.0.1, and this server's database as Flowdeck's own)."""
    query_options = {
        "sqlite_dirs": [str(tmp_path.parent)], "own_database_url": db.url, "http_allow": LOCAL_HTTP, **(queries or {})
    }  # fmt: skip

    @asynccontextmanager
    async def runtime(given: Settings) -> AsyncIterator[_Runtime]:
        limits = RunLimits(given.max_tree_runs, given.tenant_active_runs, given.max_run_bytes)
        queries = QueryEngine(**query_options)
        store = DataSourceStore(db, SecretBox("api-test-secret"))
        registry = make_test_registry()
        registry.add(HttpRequestHandler(store, queries))  # needs the query engine, as in flowdeck.runtime
        engine = Engine(db, registry, lease_seconds=2.0, poll_interval=0.05, limits=limits)
        await engine.start()
        try:
            yield _Runtime(db, engine, DataService(store, queries))
        finally:
            await engine.stop()
            await queries.close()

    options: dict[str, Any] = {
        "runtime_factory": runtime,
        "password_hasher": FAST_HASHER,
        "login_limits": LoginLimits(per_email=5, per_address=10_000),
        "static_dir": tmp_path / "static",
        **config,
    }
    app = build_app(Settings(database_url=db.url, **(settings or {})), ApiConfig(**options))
    # The server keeps an idle connection longer than httpx's pool does (5 s): with uvicorn's default, also 5 s, a
    # request sent on a connection idle for just that long met the server closing it (httpx.ReadError, seen once
    # on a loaded machine).
    listening = uvicorn.Config(
        app.asgi,
        host="127.0.0.1",
        port=0,
        log_level="warning",
        lifespan="on",
        proxy_headers=False,
        timeout_keep_alive=60,
    )
    server = _Uvicorn(listening)
    task = asyncio.create_task(server.serve())
    while not server.started:
        if task.done():
            raise RuntimeError("the server did not start") from task.exception()
        await asyncio.sleep(0.01)
    port = server.servers[0].sockets[0].getsockname()[1]
    try:
        yield Server(app, f"http://127.0.0.1:{port}", server)
    finally:
        server.should_exit = True
        server.stopping.set()
        await task


@pytest.fixture(scope="module", params=["sqlite", "postgres"])
def api_db_url(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> str:
    if request.param == "sqlite":
        return f"sqlite+aiosqlite:///{tmp_path_factory.mktemp('api') / 'flowdeck.db'}"
    return str(request.getfixturevalue("postgres_url"))


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def api_db(api_db_url: str) -> AsyncIterator[Database]:
    """One database per test module and backend; tests keep apart by using tenants of their own."""
    database = Database(api_db_url)
    if database.is_sqlite:
        await database.create_all()
    else:
        async with database.transaction() as conn:
            names = ", ".join(f'"{t.name}"' for t in reversed(metadata.sorted_tables))
            await conn.execute(sa.text(f"TRUNCATE {names} RESTART IDENTITY CASCADE"))
    yield database
    await database.dispose()


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def server(api_db: Database, tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Server]:
    """The app, shared by the tests of a module (per backend)."""
    async with serve(api_db, tmp_path_factory.mktemp("static")) as running:
        yield running


def _unique(name: str) -> str:
    return f"{name}-{uuid.uuid4().hex[:8]}"


@pytest_asyncio.fixture(loop_scope="module")
async def alice(server: Server) -> AsyncIterator[Account]:
    """A user of a tenant of its own (new for each test)."""
    account = await server.account(f"{_unique('alice')}@acme.test", _unique("acme"))
    async with account.client:
        yield account


@pytest_asyncio.fixture(loop_scope="module")
async def mallory(server: Server) -> AsyncIterator[Account]:
    """A user of another tenant."""
    account = await server.account(f"{_unique('mallory')}@umbrella.test", _unique("umbrella"))
    async with account.client:
        yield account


@pytest_asyncio.fixture(loop_scope="module")
async def anonymous(server: Server) -> AsyncIterator[httpx.AsyncClient]:
    async with server.client() as client:
        yield client
