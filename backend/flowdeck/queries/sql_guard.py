"""Where a SQL data source may point, checked before and while it connects (SPEC §6, issue 11).

SQLite: Flowdeck opens the file itself, from a plain absolute path (no ``file:`` URI, no URL
parameters such as ``?uri=``, ``mode=`` or ``vfs=``): the real path after every symlink must lie
inside a directory listed in ``FLOWDECK_SQLITE_DIRS`` (unset: SQLite data sources are refused), the
file must exist (it is never created) and must not be Flowdeck's own database (the same file on
disk, compared by device and inode, not by name). It is opened ``mode=ro`` with ``query_only`` unless
the data source sets ``readOnly: false`` (then ``mode=rw``, still never creating a file).

PostgreSQL: a data source may not reach Flowdeck's own database. Every new connection of a data
source asks the server who it is (``current_database()`` and the cluster's ``system_identifier``,
which a physical replica shares; the postmaster's start time and port where that function is not
allowed) and compares that with Flowdeck's own connection, so no spelling of the URL (another host
name, address, port forward or proxy) gets around it. On that same server a data source may not
connect as a superuser (or a member of ``pg_read_server_files`` / ``pg_execute_server_program``):
such a role could reach Flowdeck's database from any other one (``dblink``, server files).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final
from urllib.parse import quote

from sqlalchemy.engine import URL

from flowdeck.storage.sqlite_writer_lock import LOCK_SUFFIX as WRITER_LOCK_SUFFIX
from flowdeck.storage.sqlite_writer_lock import WAIT_SUFFIX as WRITER_WAIT_SUFFIX

__all__ = (
    "SQLITE_DIRS_SETTING",
    "PostgresIdentity",
    "SourceRefusedError",
    "SqlitePolicy",
    "postgres_identity",
    "sqlite_uri",
)

SQLITE_DIRS_SETTING: Final = "FLOWDECK_SQLITE_DIRS"
_SIDE_FILES: Final = ("", "-wal", "-shm", "-journal", WRITER_LOCK_SUFFIX, WRITER_WAIT_SUFFIX)


class SourceRefusedError(ValueError):
    """A data source points somewhere it may not (the message says where and which setting decides)."""


def _inside(path: str, directory: str) -> bool:
    try:
        return path != directory and os.path.commonpath([path, directory]) == directory
    except ValueError:
        return False


@dataclass(frozen=True, slots=True)
class SqlitePolicy:
    """The directories SQLite files may be opened from (``None``: none) and Flowdeck's own files."""

    directories: tuple[str, ...] | None = None
    own_files: tuple[str, ...] = ()
    read_only_directories: tuple[str, ...] = ()
    """Shared files (the examples' data): opened read-only whatever a data source's ``readOnly`` says."""
    shown_directories: tuple[str, ...] = ()
    """``FLOWDECK_SQLITE_DIRS`` as the operator wrote it: what users are told. Never the resolved paths (symlink
    targets) nor the package's own example directory, which are the server's business."""

    @classmethod
    def create(
        cls, directories: Sequence[str] | None, own_files: Sequence[str] = (), read_only: Sequence[str] = ()
    ) -> SqlitePolicy:
        shared = tuple(os.path.realpath(d) for d in read_only if d)
        dirs = None if directories is None else tuple(os.path.realpath(d) for d in directories if d)
        if shared:
            dirs = (*(dirs or ()), *shared)
        shown = tuple(d for d in directories or () if d)
        return cls(dirs or None, tuple(own_files), shared, shown)

    def _where(self) -> str:
        if not self.shown_directories:
            return f"{SQLITE_DIRS_SETTING} is not set on this server"
        return f"{SQLITE_DIRS_SETTING}: {', '.join(self.shown_directories)}"

    def always_read_only(self, real_path: str) -> bool:
        return any(_inside(real_path, d) for d in self.read_only_directories)

    def file_of(self, url: URL) -> str:
        """The real path of the SQLite file ``url`` names, or ``SourceRefusedError`` saying why not."""
        if not self.directories:
            raise SourceRefusedError(
                f"SQLite data sources are refused on this server: {SQLITE_DIRS_SETTING} is not set "
                "(an operator lists there the directories SQLite files may be opened from)"
            )
        database = _plain_path(url)
        real = os.path.realpath(database)  # every symlink resolved
        if not any(_inside(real, d) for d in self.directories):
            raise SourceRefusedError(
                f"{database} is outside the directories SQLite files may be opened from ({self._where()})"
            )
        try:
            stat = Path(real).stat()
        except OSError:
            raise SourceRefusedError(f"{database} does not exist (Flowdeck does not create SQLite files)") from None
        if not Path(real).is_file():
            raise SourceRefusedError(f"{database} is not a file")
        if any(_same_file(stat, own + side) for own in self.own_files for side in _SIDE_FILES):
            raise SourceRefusedError(f"{database} is Flowdeck's own database")
        return real


def _plain_path(url: URL) -> str:
    database = url.database or ""
    if url.query or "?" in database:
        raise SourceRefusedError("a SQLite data source is a plain file path: URL parameters (?uri=, mode=, vfs=) "
                                 "are refused")  # fmt: skip
    if url.host or url.port or url.username:
        raise SourceRefusedError("a SQLite URL names a file: sqlite+aiosqlite:////absolute/path.db (no host)")
    if database.lower().startswith("file:"):
        raise SourceRefusedError("a SQLite data source is a plain file path: 'file:' URIs are refused")
    if not database or database == ":memory:" or not Path(database).is_absolute():
        raise SourceRefusedError(f"a SQLite data source is an absolute path to a file inside {SQLITE_DIRS_SETTING}")
    return database


def _same_file(stat: os.stat_result, other: str) -> bool:
    try:
        found = Path(other).stat()
    except OSError:
        return False
    return (found.st_dev, found.st_ino) == (stat.st_dev, stat.st_ino)


def sqlite_uri(real_path: str, *, read_only: bool) -> str:
    """The URI Flowdeck opens: the path percent-encoded (so it cannot add parameters) and its own mode."""
    return f"file:{quote(real_path)}?mode={'ro' if read_only else 'rw'}"


@dataclass(frozen=True, slots=True)
class PostgresIdentity:
    database: str
    system_identifier: str | None
    started: str
    powerful: bool = False
    """The role is a superuser or may read server files or run programs (it could reach any database)."""

    def same_server(self, other: PostgresIdentity) -> bool:
        if self.system_identifier is not None and other.system_identifier is not None:
            return self.system_identifier == other.system_identifier
        return self.started == other.started

    def same_database(self, other: PostgresIdentity) -> bool:
        return self.database == other.database and self.same_server(other)

    def refusal(self, own: PostgresIdentity) -> str | None:
        """Why a data source connected as ``self`` may not stay connected, given Flowdeck's ``own`` identity."""
        if self.same_database(own):
            return "it reaches Flowdeck's own database; that is never allowed"
        if self.powerful and self.same_server(own):
            return ("it connects as a superuser (or a role that reads server files or runs programs) to the server "
                    "that holds Flowdeck's own database; use a role without those rights")  # fmt: skip
        return None


_WHO: Final = (
    "SELECT current_database(), pg_postmaster_start_time()::text || ' port ' || current_setting('port'), "
    "current_setting('is_superuser') = 'on' OR pg_has_role('pg_read_server_files', 'MEMBER') "
    "OR pg_has_role('pg_execute_server_program', 'MEMBER')"
)


async def postgres_identity(conn: Any) -> PostgresIdentity:
    """Who the server behind an asyncpg connection is (see the module's note); one round trip as a rule."""
    try:
        row = await conn.fetchrow(f"{_WHO}, (SELECT system_identifier::text FROM pg_control_system())")
    except Exception:  # noqa: BLE001  (pg_control_system not allowed for this role: start time and port decide)
        row = (*(await conn.fetchrow(_WHO)), None)
    return PostgresIdentity(str(row[0]), None if row[3] is None else str(row[3]), str(row[1]), bool(row[2]))
