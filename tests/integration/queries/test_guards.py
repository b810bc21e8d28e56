"""Where a data source may point, tried as an attacker would: SQLite files, Flowdeck's own database, SSRF.

Each refusal is checked where a user meets it: ``check_source`` (what saving refuses, 400 naming the
field) and running a query (a source stored before the rules still fails, with a clear error).
"""

from __future__ import annotations

import os
import sqlite3
import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import sqlalchemy as sa
from sqlalchemy.engine import make_url
from sqlalchemy.ext.asyncio import create_async_engine

from flowdeck.domain.errors import NodeError
from flowdeck.queries.engine import QueryEngine
from flowdeck.queries.models import DataSource
from tests.integration.queries.conftest import LOCAL
from tests.integration.queries.support import query, source


def make_db(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE secrets (v TEXT)")
        conn.execute("INSERT INTO secrets VALUES ('flowdeck internals')")
    conn.close()
    return path


async def refusal(engine: QueryEngine, src: DataSource) -> str:
    q = query(src, [], sql="SELECT * FROM secrets") if src.kind == "sql" else query(src, [], path="/latest")
    with pytest.raises(NodeError) as failure:
        await engine.run(src, {}, q, {})
    assert not failure.value.retryable and failure.value.error_type in ("ConfigError", "AddressRefused")
    return failure.value.message


def sql(url: str, name: str = "src", **config: object) -> DataSource:
    return source("sql", {"url": url, **config}, source_id=f"{name}:{url}:{sorted(config.items())}", name=name)


async def test_sqlite_is_refused_when_no_directory_is_configured(tmp_path: Path) -> None:
    data = make_db(tmp_path / "data.db")
    async with QueryEngine() as engine:
        src = sql(f"sqlite:///{data}")
        assert "FLOWDECK_SQLITE_DIRS is not set" in await refusal(engine, src)
        assert [p.path for p in engine.check_source("sql", src.config)] == ["config.url"]
        assert "FLOWDECK_SQLITE_DIRS" in (await engine.probe(src, {}))["message"]


async def test_the_uri_bypass_and_every_other_way_to_flowdecks_own_file(tmp_path: Path) -> None:
    allowed = tmp_path / "data"
    own = make_db(allowed / "flowdeck.db")  # the worst case: Flowdeck's own file inside an allowed directory
    make_db(tmp_path / "outside.db")
    (allowed / "link.db").symlink_to(own)
    (allowed / "escape.db").symlink_to(tmp_path / "outside.db")
    os.link(own, allowed / "hardlink.db")
    for side in ("-wal", "-writer", "-writer-wait"):  # its side files, the writers' lock files among them
        Path(f"{own}{side}").touch()
    attempts = {
        f"sqlite+aiosqlite:///file://localhost{own}?uri=true": "URL parameters",
        f"sqlite:///file://localhost{own}?uri=true": "URL parameters",
        f"sqlite:///file:{own}": "'file:' URIs are refused",
        f"sqlite:///{allowed}/data.db?mode=rwc": "URL parameters",
        f"sqlite:///{allowed}/x.db?vfs=unix-none": "URL parameters",
        f"sqlite:///{own}": "Flowdeck's own database",
        f"sqlite:///{allowed}/../data/./flowdeck.db": "Flowdeck's own database",
        f"sqlite:///{allowed}/link.db": "Flowdeck's own database",
        f"sqlite:///{allowed}/hardlink.db": "Flowdeck's own database",
        f"sqlite:///{own}-wal": "Flowdeck's own database",
        f"sqlite:///{own}-writer": "Flowdeck's own database",
        f"sqlite:///{own}-writer-wait": "Flowdeck's own database",
        f"sqlite:///{allowed}/escape.db": "outside the directories",
        f"sqlite:///{tmp_path}/outside.db": "outside the directories",
        "sqlite:////etc/passwd": "outside the directories",
        "sqlite:///relative.db": "absolute path",
        "sqlite://": "absolute path",
        "sqlite:///:memory:": "absolute path",
    }
    async with QueryEngine(sqlite_dirs=[str(allowed)], own_database_url=f"sqlite+aiosqlite:///{own}") as engine:
        for url, expected in attempts.items():
            src = sql(url)
            assert expected in await refusal(engine, src), url
            issues = engine.check_source("sql", src.config)
            assert [(p.path, expected in p.message) for p in issues] == [("config.url", True)], url
        # a missing file is refused, and not created
        missing = sql(f"sqlite:///{allowed}/new.db", readOnly=False)
        assert "does not exist" in await refusal(engine, missing)
        assert not (allowed / "new.db").exists()
        # relative own path: compared by the file, not the string
    cwd = Path.cwd()
    os.chdir(allowed)
    try:
        async with QueryEngine(sqlite_dirs=[str(allowed)], own_database_url="sqlite+aiosqlite:///./flowdeck.db") as eng:
            assert "Flowdeck's own database" in await refusal(eng, sql(f"sqlite:///{own}"))
    finally:
        os.chdir(cwd)


async def test_sqlite_is_read_only_unless_the_source_opts_into_writes(tmp_path: Path) -> None:
    data = make_db(tmp_path / "shop.db")
    async with QueryEngine(sqlite_dirs=[str(tmp_path)]) as engine:
        reader = sql(f"sqlite:///{data}")
        assert (await engine.run(reader, {}, query(reader, [], sql="SELECT v FROM secrets"), {}))["rowCount"] == 1
        await engine.run(reader, {}, query(reader, [], sql="PRAGMA query_only = OFF"), {})  # the file is still ro
        for statement in ("INSERT INTO secrets VALUES ('x')", "DELETE FROM secrets"):
            with pytest.raises(NodeError) as failure:
                await engine.run(reader, {}, query(reader, [], sql=statement), {})
            assert "read-only" in failure.value.message and not failure.value.retryable
        writer = sql(f"sqlite:///{data}", readOnly=False)
        assert (await engine.run(writer, {}, query(writer, [], sql="DELETE FROM secrets"), {}))["rowCount"] == 1
    with sqlite3.connect(data) as conn:
        assert conn.execute("SELECT count(*) FROM secrets").fetchone() == (0,)  # only the writer's DELETE counted
    conn.close()


async def test_shared_read_only_directories_are_never_written_even_when_a_source_asks(tmp_path: Path) -> None:
    """The examples' data file is shared by every tenant: a source with readOnly false still cannot change it."""
    shared = tmp_path / "examples"
    shared.mkdir()
    data = make_db(shared / "shop.db")
    async with QueryEngine(sqlite_dirs=None, sqlite_read_only_dirs=[str(shared)]) as engine:
        writer = sql(f"sqlite:///{data}", readOnly=False)
        assert (await engine.run(writer, {}, query(writer, [], sql="SELECT v FROM secrets"), {}))["rowCount"] == 1
        with pytest.raises(NodeError) as refused:
            await engine.run(writer, {}, query(writer, [], sql="DELETE FROM secrets"), {})
        assert "readonly database" in refused.value.message
    with sqlite3.connect(data) as conn:
        assert conn.execute("SELECT count(*) FROM secrets").fetchone() == (1,)
    conn.close()


def _spellings(url: str) -> list[str]:
    """Other ways to write the URL of the same PostgreSQL database."""
    u = make_url(url)
    other_host = "localhost" if u.host == "127.0.0.1" else "127.0.0.1"
    return [url, u.set(host=other_host).render_as_string(hide_password=False),
            u.set(drivername="postgresql").render_as_string(hide_password=False)]  # fmt: skip


@pytest.fixture
async def reader_role(postgres_url: str) -> AsyncIterator[str]:
    """A login role without special rights (the test server trusts local connections)."""
    role = f"fd_reader_{uuid.uuid4().hex[:8]}"
    engine = create_async_engine(postgres_url)
    async with engine.begin() as conn:
        await conn.execute(sa.text(f"CREATE ROLE {role} LOGIN"))
    try:
        yield role
    finally:
        async with engine.begin() as conn:
            await conn.execute(sa.text(f"DROP ROLE {role}"))
        await engine.dispose()


async def test_flowdecks_own_postgres_database_is_refused_by_connecting(postgres_url: str, reader_role: str) -> None:
    async with QueryEngine(own_database_url=postgres_url) as engine:
        for url in _spellings(postgres_url):
            src = sql(url, name="mine")
            assert engine.check_source("sql", src.config) == []  # saving does not connect ...
            assert "Flowdeck's own database" in await refusal(engine, src), url  # ... using does
            probe = await engine.probe(src, {})
            assert probe["ok"] is False and "Flowdeck's own database" in probe["message"]
        as_reader = make_url(postgres_url).set(username=reader_role)
        assert "Flowdeck's own database" in await refusal(engine, sql(as_reader.render_as_string(False)))
        # another database of the same server: allowed for a plain role ...
        other = sql(as_reader.set(database="postgres").render_as_string(hide_password=False), name="other")
        assert (await engine.run(other, {}, query(other, [], sql="SELECT current_database() AS d"), {}))["rows"] == [
            {"d": "postgres"}
        ]
        assert (await engine.probe(other, {}))["ok"] is True
        # ... not for a superuser, who could reach Flowdeck's database from there (dblink, server files)
        admin = sql(make_url(postgres_url).set(database="postgres").render_as_string(hide_password=False))
        assert "superuser" in await refusal(engine, admin)


async def test_postgres_is_read_only_unless_the_source_opts_into_writes(postgres_url: str) -> None:
    url = make_url(postgres_url).set(database="postgres").render_as_string(hide_password=False)
    async with QueryEngine() as engine:
        reader = sql(url)
        # a session-level "read write" does not outlast the transaction's own SET TRANSACTION READ ONLY
        await engine.run(reader, {}, query(reader, [], sql="SET SESSION CHARACTERISTICS AS TRANSACTION READ WRITE"), {})
        with pytest.raises(NodeError) as refused:
            await engine.run(reader, {}, query(reader, [], sql="CREATE TEMP TABLE t_ro (x int)"), {})
        assert "read-only transaction" in refused.value.message and "config.readOnly" in refused.value.message
        writer = sql(url, readOnly=False)
        result = await engine.run(writer, {}, query(writer, [], sql="CREATE TEMP TABLE t_rw (x int)"), {})
        assert result["rows"] == []


async def test_http_sources_cannot_reach_internal_addresses(http_base: str) -> None:
    port = http_base.rsplit(":", 1)[1]
    async with QueryEngine() as engine:  # no FLOWDECK_HTTP_ALLOW
        internal = [http_base, f"http://2130706433:{port}", f"http://[::ffff:127.0.0.1]:{port}",
                    "http://169.254.169.254", "http://metadata.google.internal",
                    f"http://localhost:{port}"]  # fmt: skip
        for base in internal:
            src = source("http", {"baseUrl": base}, name="internal")
            assert [p.path for p in engine.check_source("http", src.config)] == ["config.baseUrl"], base
            message = await refusal(engine, src)  # stored before the rules existed: refused when used
            assert "FLOWDECK_HTTP_ALLOW" in message and "internal" in message
        assert engine.check_source("http", {"baseUrl": "https://api.example.com"}) == []
    async with QueryEngine(http_allow=LOCAL) as engine:
        src = source("http", {"baseUrl": http_base})
        assert (await engine.run(src, {}, query(src, [], path="/echo"), {}))["status"] == 200
        assert (await engine.probe(src, {}))["ok"] is True
