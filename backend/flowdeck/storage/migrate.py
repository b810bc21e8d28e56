"""``flowdeck migrate``: Alembic upgrade to head, with the migration scripts shipped in the package."""

from __future__ import annotations

import asyncio
from pathlib import Path

from alembic import command
from alembic.config import Config

__all__ = ("alembic_config", "upgrade")

MIGRATIONS = Path(__file__).parent / "migrations"


def alembic_config(database_url: str) -> Config:
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    config.set_main_option("sqlalchemy.url", database_url.replace("%", "%%"))
    return config


def _upgrade_sync(database_url: str) -> None:
    command.upgrade(alembic_config(database_url), "head")


async def upgrade(database_url: str) -> None:
    """Migrate the database to the latest schema (the env runs its own event loop: use a thread)."""
    await asyncio.to_thread(_upgrade_sync, database_url)
