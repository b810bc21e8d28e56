"""``flowdeck users create``, ``flowdeck tokens create`` and the one-time login link of ``flowdeck serve``."""

from __future__ import annotations

import asyncio
import io
import uuid
from pathlib import Path

import pytest
from alembic import command

from flowdeck.accounts.commands import open_accounts
from flowdeck.accounts.passwords import PasswordService
from flowdeck.api.config import ReadyInfo
from flowdeck.cli import _announce, _shown_url, main
from flowdeck.settings import Settings
from flowdeck.storage.database import Database
from flowdeck.storage.migrate import alembic_config
from tests.api.conftest import FAST_HASHER, serve


class _Stdin(io.StringIO):
    def __init__(self, text: str, tty: bool = False) -> None:
        super().__init__(text)
        self._tty = tty

    def isatty(self) -> bool:
        return self._tty


@pytest.fixture
def cli_database(database_url: str, monkeypatch: pytest.MonkeyPatch) -> str:
    """The configured database for the CLI; a SQLite file gets the schema and is marked migrated."""
    if database_url.startswith("sqlite"):

        async def create() -> None:
            db = Database(database_url)
            await db.create_all()
            await db.dispose()

        asyncio.run(create())
        command.stamp(alembic_config(database_url), "head")
    monkeypatch.setenv("FLOWDECK_DATABASE_URL", database_url)
    monkeypatch.setattr("flowdeck.accounts.commands.PasswordService", lambda: PasswordService(FAST_HASHER))
    return database_url


def login_works(database_url: str, email: str, password: str) -> bool:
    async def attempt() -> bool:
        async with open_accounts(Settings(database_url=database_url)) as accounts:
            try:
                await accounts.login(email, password, "test")
            except Exception:
                return False
            return True

    return asyncio.run(attempt())


def test_users_create_reads_the_password_from_stdin_or_generates_one(
    cli_database: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    email = f"ops-{uuid.uuid4().hex[:8]}@acme.test"
    monkeypatch.setattr("sys.stdin", _Stdin("s3cret-passphrase\n"))
    assert main(["users", "create", "--email", email, "--tenant", "acme"]) == 0
    printed = capsys.readouterr()
    assert f"created user {email} in tenant acme" in printed.err and printed.out == ""  # nothing secret to print
    assert login_works(cli_database, email, "s3cret-passphrase")

    other = f"dev-{uuid.uuid4().hex[:8]}@acme.test"
    monkeypatch.setattr("sys.stdin", _Stdin("", tty=True))
    assert main(["users", "create", "--email", other, "--tenant", "acme"]) == 0
    printed = capsys.readouterr()
    generated = printed.out.removesuffix("\n")  # the password alone on stdout, the rest on stderr
    assert "\n" not in generated and generated not in printed.err and f"created user {other}" in printed.err
    assert len(generated) >= 16 and login_works(cli_database, other, generated)

    assert main(["users", "create", "--email", email, "--tenant", "acme"]) == 1
    assert "already exists" in capsys.readouterr().err
    monkeypatch.setattr("sys.stdin", _Stdin("short\n"))
    assert main(["users", "create", "--email", f"x{email}", "--tenant", "acme"]) == 2


def test_tokens_create_prints_a_token_that_authenticates(
    cli_database: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    email = f"bot-{uuid.uuid4().hex[:8]}@acme.test"
    monkeypatch.setattr("sys.stdin", _Stdin("a-long-enough-password\n"))
    main(["users", "create", "--email", email, "--tenant", "acme"])
    capsys.readouterr()
    assert main(["tokens", "create", "--email", email, "--name", "deploys"]) == 0
    token = capsys.readouterr().out.removesuffix("\n")
    assert token.startswith("fdk_") and "\n" not in token and " " not in token  # the token and nothing else

    async def who() -> str | None:
        async with open_accounts(Settings(database_url=cli_database)) as accounts:
            principal = await accounts.authenticate_token(token)
            return None if principal is None else principal.email

    assert asyncio.run(who()) == email


async def test_serve_on_a_fresh_database_announces_a_one_time_login_link(db: Database, tmp_path: Path) -> None:
    ready: list[ReadyInfo] = []
    async with serve(db, tmp_path, bootstrap_admin=True, on_ready=ready.append) as server:
        [info] = ready
        assert info.login_path is not None and info.email == "admin@flowdeck.local"
        async with server.client() as browser:
            opened = await browser.get(info.login_path)
            assert opened.status_code in (302, 303)
            me = (await browser.get("/api/auth/me")).json()
            assert me["user"]["email"] == "admin@flowdeck.local" and me["user"]["tenantName"] == "default"
            assert (await browser.get(info.login_path)).status_code == 404  # one time only
        async with server.client() as other:
            login = await other.post("/api/auth/login", json={"email": info.email, "password": info.password})
            assert login.status_code == 200
    async with serve(db, tmp_path, bootstrap_admin=True, on_ready=ready.append):
        assert ready[1] == ReadyInfo()  # users exist now: no new link


def test_serve_prints_the_link_to_open(capsys: pytest.CaptureFixture[str]) -> None:
    _announce("http://127.0.0.1:8000")(ReadyInfo(login_path="/api/auth/link/abc", email="a@b.c", password="pw"))
    out = capsys.readouterr().out
    assert "http://127.0.0.1:8000/api/auth/link/abc" in out and "a@b.c" in out
    _announce("http://127.0.0.1:8000")(ReadyInfo())
    assert "link" not in capsys.readouterr().out


def test_serve_does_not_print_the_database_password() -> None:
    shown = _shown_url("postgresql+asyncpg://flowdeck:hunter2@db.internal:5432/flowdeck")
    assert shown == "postgresql+asyncpg://flowdeck:***@db.internal:5432/flowdeck"
    assert _shown_url("sqlite+aiosqlite:///./flowdeck.db") == "sqlite+aiosqlite:///./flowdeck.db"
