"""``flowdeck backup`` and ``flowdeck restore`` (SPEC §10).

SQLite: the backup is SQLite's online backup API (``sqlite3.Connection.backup``), never a file copy,
which would tear a database that ``serve`` writes to (the WAL file holds the latest commits). The
copy runs in steps of pages, to show progress, inside one read transaction on the source: in WAL
mode a reader sees one snapshot and never blocks the writers, so the copy is consistent (it is the
database as of the moment the backup began) while ``serve`` keeps running, and no step has to start
over because of a write in between.

A restore refuses a database that is in use: it takes SQLite's exclusive lock (``locking_mode =
EXCLUSIVE`` with ``BEGIN EXCLUSIVE``). On a database in WAL mode, as every Flowdeck connection sets
it, that fails while any other connection has the file open, even an idle one, and every ``flowdeck
serve`` and ``worker`` keeps its connections open while it runs (the OS drops the locks of a process
that dies: there is no stale lock file to clean up). The backup is checked first (a SQLite file that passes
``quick_check``, with an ``alembic_version`` this version of Flowdeck knows), copied to a staging
file beside the database and migrated there to the latest revision, then written into the database
under the exclusive lock in one transaction: the live database is never left half-written or at an
old revision, and the backup file itself is never changed.

PostgreSQL: ``pg_dump`` and ``pg_restore`` do this better than Flowdeck could (a consistent snapshot
without blocking writers, compressed, restorable in parallel), so the commands only print the
command line to use, built from ``FLOWDECK_DATABASE_URL`` without its password.
"""

from __future__ import annotations

import contextlib
import os
import shlex
import sqlite3
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from alembic.script import ScriptDirectory
from sqlalchemy.engine import URL, make_url

from flowdeck.storage.migrate import Migration, alembic_config, upgrade

__all__ = (
    "BackupError",
    "BackupResult",
    "DatabaseInUseError",
    "Progress",
    "backup_sqlite",
    "database_in_use",
    "postgres_backup_advice",
    "postgres_restore_advice",
    "restore_sqlite",
    "sqlite_file",
)

Progress = Callable[[str, int, int], None]
"""Told ``(what, pages copied, pages in all)`` after each step of a copy."""

STEPS = 20
"""A copy runs in about this many steps (each one a progress line), of at least ``_MIN_STEP_PAGES`` pages."""
_MIN_STEP_PAGES = 256
_LOCK_TIMEOUT = 0.5
"""Seconds to wait for SQLite's exclusive lock before saying the database is in use."""
_SQLITE_HEADER = b"SQLite format 3\x00"


class BackupError(Exception):
    """A backup or restore that cannot be done; the message says why and what to do."""


class DatabaseInUseError(BackupError):
    """Another connection has the database open: a restore must wait until it is closed."""


@dataclass(frozen=True, slots=True)
class BackupResult:
    path: Path
    revision: str
    """The schema revision of the copy (``alembic_version``)."""
    pages: int


def sqlite_file(database_url: str) -> Path | None:
    """The database file of a SQLite URL, ``None`` for another database."""
    url = make_url(database_url)
    if url.get_backend_name() != "sqlite":
        return None
    if not url.database or url.database == ":memory:":
        raise BackupError("FLOWDECK_DATABASE_URL is an in-memory SQLite database: there is nothing to back up")
    return Path(url.database)


def backup_sqlite(
    database: Path, target: Path, *, force: bool = False, progress: Progress | None = None
) -> BackupResult:
    """Copy ``database`` to ``target`` (one self-contained file) while other processes keep using it."""
    if not database.is_file():
        raise BackupError(f"there is no database at {database} (FLOWDECK_DATABASE_URL)")
    if target.exists() and not force:
        raise BackupError(f"{target} already exists: choose another path, or pass --force to overwrite it")
    if target.exists() and target.resolve() == database.resolve():
        raise BackupError(f"{target} is the database itself: choose another path")
    if not target.parent.is_dir() or target.is_dir():
        raise BackupError(f"{target} cannot be written: its folder does not exist, or it is a folder")
    with _reported("backup"):
        return _backup(database, target, progress)


def _backup(database: Path, target: Path, progress: Progress | None) -> BackupResult:
    source = _connect(database)
    try:
        source.execute("BEGIN")  # one read snapshot for every step of the copy (WAL: writers go on)
        revision = _revision(source, database)
        partial = target.with_name(f".{target.name}.partial")
        with _removed_on_failure(partial):
            # Owner-only: a backup holds password and token hashes, encrypted secrets and every run's data.
            os.close(os.open(partial, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600))
            pages = _copy(source, partial, "backup", progress)
            partial.replace(target)
        source.execute("ROLLBACK")
    finally:
        source.close()
    return BackupResult(target, revision, pages)


async def restore_sqlite(
    backup: Path, database: Path, progress: Progress | None = None, say: Callable[[str], None] | None = None
) -> Migration:
    """Replace the contents of ``database`` with ``backup``, migrated to the latest revision.

    ``say`` is told each stage that shows no page counts (checking the backup, migrating the copy)."""
    tell = say or (lambda _: None)
    tell(f"checking {backup} (SQLite quick_check, schema revision)")
    _check_backup(backup)
    if database_in_use(database):  # before the copies, so a refusal costs nothing
        raise DatabaseInUseError(_in_use(database))
    with _reported("restore"):
        database.parent.mkdir(parents=True, exist_ok=True)
        handle, name = tempfile.mkstemp(prefix=f".{database.name}.restoring-", dir=database.parent)
        os.close(handle)
    staging = Path(name)
    try:
        with _reported("restore"):
            return await _restore(backup, database, staging, progress, tell)
    finally:
        for leftover in (staging, *(staging.with_name(staging.name + s) for s in ("-wal", "-shm", "-journal"))):
            leftover.unlink(missing_ok=True)


async def _restore(
    backup: Path, database: Path, staging: Path, progress: Progress | None, tell: Callable[[str], None]
) -> Migration:
    source = _connect(backup, read_only=True)
    try:
        _copy(source, staging, "copy", progress)
    finally:
        source.close()
    tell("bringing the copy to the latest schema revision")
    migration = await upgrade(f"sqlite+aiosqlite:///{staging}")
    with _exclusive(database) as live:
        staged = _connect(staging, read_only=True)
        try:
            _step_copy(staged, live, "restore", progress)
        finally:
            staged.close()
    return migration


def database_in_use(database: Path) -> bool:
    """Whether another connection (a running ``serve`` or ``worker``, a ``sqlite3`` shell) has the file open."""
    if not database.exists():
        return False
    try:
        with _exclusive(database):
            return False
    except DatabaseInUseError:
        return True


def postgres_backup_advice(database_url: str, target: str) -> str:
    url = make_url(database_url)
    command = ["pg_dump", "--format=custom", f"--file={target}", *_connection_options(url), url.database or ""]
    return "\n".join(
        (
            "FLOWDECK_DATABASE_URL is a PostgreSQL database: back it up with pg_dump (Flowdeck does not run it):",
            "",
            f"    {shlex.join(command)}",
            "",
            "pg_dump reads one consistent snapshot of the database while Flowdeck keeps running, without blocking",
            "it. --format=custom (-Fc) writes a compressed archive that pg_restore can restore selectively and in",
            "parallel (-j). The password is not shown: give it in PGPASSWORD or ~/.pgpass.",
            "Restore it with `flowdeck restore PATH`, which prints the pg_restore command.",
        )
    )


def postgres_restore_advice(database_url: str, backup: str) -> str:
    url = make_url(database_url)
    command = ["pg_restore", "--clean", "--if-exists", "--no-owner", "--single-transaction"]
    command += [*_connection_options(url), f"--dbname={url.database or ''}", backup]
    return "\n".join(
        (
            "FLOWDECK_DATABASE_URL is a PostgreSQL database: restore a pg_dump -Fc archive with pg_restore.",
            "",
            "    1. stop every `flowdeck serve` and `flowdeck worker` using this database",
            f"    2. {shlex.join(command)}",
            "    3. flowdeck migrate      (brings a backup taken by an older Flowdeck to the latest schema)",
            "    4. start serve and the workers again",
            "",
            "--clean --if-exists drops what the database holds before restoring into it; --single-transaction",
            "leaves it untouched if anything fails. The password is not shown: give it in PGPASSWORD or ~/.pgpass.",
        )
    )


def _connection_options(url: URL) -> list[str]:
    options = [f"--host={url.host}"] if url.host else []
    if url.port:
        options.append(f"--port={url.port}")
    if url.username:
        options.append(f"--username={url.username}")
    return options


def _connect(path: Path, *, read_only: bool = False) -> sqlite3.Connection:
    if read_only:
        return sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True, isolation_level=None)
    return sqlite3.connect(path, isolation_level=None)


def _copy(source: sqlite3.Connection, target: Path, what: str, progress: Progress | None) -> int:
    """Copy ``source`` into a new file ``target`` and make it self-contained (no WAL beside it)."""
    copy = sqlite3.connect(target, isolation_level=None)
    try:
        pages = _step_copy(source, copy, what, progress)
        copy.execute("PRAGMA journal_mode=DELETE")
    finally:
        copy.close()
    return pages


def _step_copy(source: sqlite3.Connection, target: sqlite3.Connection, what: str, progress: Progress | None) -> int:
    total = int(source.execute("PRAGMA page_count").fetchone()[0])
    step = max(_MIN_STEP_PAGES, -(-total // STEPS))

    def report(_status: int, remaining: int, pages: int) -> None:
        if progress is not None:
            progress(what, pages - remaining, pages)

    source.backup(target, pages=step, progress=report, sleep=0)
    return total


def _check_backup(backup: Path) -> None:
    if not backup.is_file():
        raise BackupError(f"there is no backup at {backup}")
    with backup.open("rb") as file:
        if file.read(len(_SQLITE_HEADER)) != _SQLITE_HEADER:
            raise BackupError(f"{backup} is not a SQLite database (a Flowdeck backup is one)")
    source = _connect(backup, read_only=True)
    try:
        checked = source.execute("PRAGMA quick_check").fetchone()[0]
        if checked != "ok":
            raise BackupError(f"{backup} is damaged (SQLite quick_check: {checked}): restore another backup")
        revision = _revision(source, backup)
    except sqlite3.DatabaseError as exc:
        raise BackupError(f"{backup} cannot be read as a SQLite database: {exc}") from exc
    finally:
        source.close()
    known = {script.revision for script in ScriptDirectory.from_config(alembic_config("sqlite://")).walk_revisions()}
    if revision not in known:
        raise BackupError(
            f"{backup} is at schema revision {revision}, which this version of Flowdeck does not know "
            "(a backup from a newer Flowdeck?): restore it with that version"
        )


def _revision(connection: sqlite3.Connection, path: Path) -> str:
    try:
        row = connection.execute("SELECT version_num FROM alembic_version").fetchone()
    except sqlite3.OperationalError as exc:
        raise BackupError(f"{path} is not a Flowdeck database (it has no alembic_version table)") from exc
    if row is None:
        raise BackupError(f"{path} is not a Flowdeck database (its alembic_version table is empty)")
    return str(row[0])


@contextlib.contextmanager
def _exclusive(database: Path) -> Iterator[sqlite3.Connection]:
    """A connection holding SQLite's exclusive lock on ``database`` until the block ends."""
    connection = sqlite3.connect(database, isolation_level=None, timeout=_LOCK_TIMEOUT)
    try:
        try:
            connection.execute("PRAGMA locking_mode=EXCLUSIVE")
            connection.execute("BEGIN EXCLUSIVE")  # held after COMMIT: exclusive locking mode keeps it
            connection.execute("COMMIT")
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) and "busy" not in str(exc):
                raise BackupError(f"{database} cannot be opened: {exc}") from exc
            raise DatabaseInUseError(_in_use(database)) from exc
        yield connection
    finally:
        connection.close()


def _in_use(database: Path) -> str:
    return (
        f"the database {database} is in use (a running `flowdeck serve` or `flowdeck worker`, or another program "
        "has it open): stop them first, then restore"
    )


@contextlib.contextmanager
def _reported(what: str) -> Iterator[None]:
    """SQLite's and the OS's errors (a full disk, a read-only folder) as a ``BackupError`` naming the step."""
    try:
        yield
    except (sqlite3.Error, OSError) as exc:
        raise BackupError(f"the {what} failed: {exc}") from exc


@contextlib.contextmanager
def _removed_on_failure(path: Path) -> Iterator[None]:
    path.unlink(missing_ok=True)
    try:
        yield
    except BaseException:
        path.unlink(missing_ok=True)
        raise
