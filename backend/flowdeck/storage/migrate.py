"""``flowdeck migrate``: Alembic upgrade to head, with the migration scripts shipped in the package.

An upgrade that changed the schema says so in one line, ``database migrated to <revision>``, logged at
INFO on this module's logger (the CLI shows that logger's lines even when it is otherwise quiet).
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from pathlib import Path

import sqlalchemy as sa
from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy.engine import Connection
from sqlalchemy.ext.asyncio import create_async_engine

__all__ = ("Migration", "SchemaRevisionError", "alembic_config", "require_latest", "upgrade")

MIGRATIONS = Path(__file__).parent / "migrations"
log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Migration:
    before: str | None
    """The revision the database was at (``None``: a new database)."""
    head: str
    """The revision it is at now, the latest one."""

    @property
    def changed(self) -> bool:
        return self.before != self.head


def alembic_config(database_url: str) -> Config:
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    config.set_main_option("sqlalchemy.url", database_url.replace("%", "%%"))
    return config


class SchemaRevisionError(ValueError):
    """The database is not at the schema revision this version of Flowdeck was written for."""


def _revision_of(connection: Connection) -> str | None:
    return MigrationContext.configure(connection).get_current_revision()


def _state_of(connection: Connection) -> tuple[str | None, bool]:
    """The database's revision, and whether it holds Flowdeck's tables at all."""
    return _revision_of(connection), sa.inspect(connection).has_table("instances")


async def _current_revision(database_url: str) -> str | None:
    engine = create_async_engine(database_url)
    try:
        async with engine.connect() as conn:
            return await conn.run_sync(_revision_of)
    finally:
        await engine.dispose()


def _upgrade_sync(config: Config) -> None:
    command.upgrade(config, "head")


async def upgrade(database_url: str) -> Migration:
    """Migrate the database to the latest schema (the env runs its own event loop: use a thread)."""
    config = alembic_config(database_url)
    head = ScriptDirectory.from_config(config).get_current_head() or "base"
    before = await _current_revision(database_url)
    if before != head:
        await asyncio.to_thread(_upgrade_sync, config)
        log.info("database migrated to %s", head)
    return Migration(before, head)


async def require_latest(database_url: str) -> None:
    """Refuse to run on a database at another revision than this version's latest (``SchemaRevisionError``).

    For the processes that do not migrate (``flowdeck worker``, ``serve`` on PostgreSQL): a new version
    would fail on the first statement that uses a new column, an old one on a newer schema is untested.
    A schema made without Alembic (``Database.create_all``, in tests) has no revision and is let through.
    """
    scripts = ScriptDirectory.from_config(alembic_config(database_url))
    head = scripts.get_current_head()
    engine = create_async_engine(database_url)
    try:
        async with engine.connect() as conn:
            current, has_tables = await conn.run_sync(_state_of)
    finally:
        await engine.dispose()
    if current == head or (current is None and has_tables):
        return
    if current is None:
        raise SchemaRevisionError("the database has no Flowdeck schema yet: run `flowdeck migrate` first")
    if current in {script.revision for script in scripts.walk_revisions()}:
        raise SchemaRevisionError(
            f"the database is at schema revision {current} and this version of Flowdeck needs {head}: "
            "stop the processes of the older version, run `flowdeck migrate`, then start this one"
        )
    raise SchemaRevisionError(
        f"the database is at schema revision {current}, which this version of Flowdeck (latest {head}) does not "
        "know: a newer version migrated it; run that version"
    )
