"""What ``flowdeck users …`` and ``flowdeck tokens …`` do, against the configured database."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from flowdeck.accounts.passwords import PasswordService
from flowdeck.accounts.rate_limit import LoginRateLimiter
from flowdeck.accounts.service import AccountsService
from flowdeck.accounts.store import UserRow
from flowdeck.settings import Settings
from flowdeck.storage.database import Database
from flowdeck.storage.migrate import upgrade

__all__ = ("create_token", "create_user", "open_accounts", "set_password")


@asynccontextmanager
async def open_accounts(settings: Settings) -> AsyncIterator[AccountsService]:
    """The account service on the configured database (a SQLite file is migrated first, as ``serve`` does)."""
    if settings.is_sqlite:
        await upgrade(settings.database_url)
    db = Database(settings.database_url, sqlite_synchronous=settings.sqlite_synchronous)
    try:
        yield AccountsService(db, PasswordService(), LoginRateLimiter(db))
    finally:
        await db.dispose()


async def create_user(settings: Settings, email: str, tenant: str, password: str) -> UserRow:
    async with open_accounts(settings) as accounts:
        return await accounts.create_user(email, tenant, password)


async def set_password(settings: Settings, email: str, password: str) -> None:
    async with open_accounts(settings) as accounts:
        await accounts.set_password(email, password)


async def create_token(settings: Settings, email: str, name: str) -> str:
    async with open_accounts(settings) as accounts:
        _, token = await accounts.create_token_for_email(email, name)
        return token
