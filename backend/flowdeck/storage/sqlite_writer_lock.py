"""SQLite's write lock between Flowdeck processes, waited for without stopping the event loop.

Write transactions run on the event loop (``storage/database.py``: the group commit), and ``BEGIN IMMEDIATE``
waits for another process's writer in SQLite's busy handler, which sleeps in steps of up to 100 ms with the
loop stopped: a ``serve`` whose worker processes write (``serve --workers N``) would answer no request
meanwhile, and a writer would start up to 100 ms after the lock was free. So every Flowdeck process takes
an exclusive ``flock`` on a file beside the database first, in a thread when it must wait (the kernel wakes
it the moment the holder lets go), and begins only then. It orders Flowdeck's writers; SQLite's own lock
stays what keeps the database consistent (other tools, migrations, never wait for this one).

A process waiting for the lock holds a shared ``flock`` on a second file meanwhile, so the holder can tell
(``contended``) and commit its open group as soon as its decisions in flight are in, instead of keeping
the lock while it runs nodes between them (storage/database.py: an early-released group stays open up
to ``defer_seconds`` to share its commit). SQLite has one writer: what all processes together can decide
is bounded by how long each holds the lock, and only deciding should.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import os

__all__ = ("LOCK_SUFFIX", "WAIT_SUFFIX", "WriterLock", "writer_lock_path")

LOCK_SUFFIX = "-writer"
"""The lock file is the database file's name with this after it."""
WAIT_SUFFIX = "-writer-wait"
"""The file the processes waiting for the lock hold shared meanwhile."""


def writer_lock_path(database_path: str) -> str | None:
    """The lock file of a database file; None for an in-memory database (one process only)."""
    if not database_path or database_path == ":memory:" or database_path.startswith("file::memory:"):
        return None
    return f"{database_path}{LOCK_SUFFIX}"


class WriterLock:
    def __init__(self, path: str) -> None:
        self.path = path
        self.wait_path = path.removesuffix(LOCK_SUFFIX) + WAIT_SUFFIX
        self._fd: int | None = None
        self._wait_fd: int | None = None

    async def acquire(self) -> bool:
        """Take the lock; ``True`` when another process held it and this waited."""
        fd = self._open()
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return False
        except BlockingIOError:
            pass
        waited = asyncio.get_running_loop().run_in_executor(None, self._wait_for, fd, self._open_wait())
        try:
            await asyncio.shield(waited)
        except asyncio.CancelledError:
            waited.add_done_callback(self._release_if_taken)  # the thread may still take it: give it back
            raise
        return True

    @staticmethod
    def _wait_for(fd: int, wait_fd: int) -> None:
        """Take the lock, saying so on the wait file meanwhile (in a thread: it blocks)."""
        fcntl.flock(wait_fd, fcntl.LOCK_SH)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
        finally:
            fcntl.flock(wait_fd, fcntl.LOCK_UN)

    def contended(self) -> bool:
        """Whether another process waits for the lock (call while holding it: two system calls)."""
        wait_fd = self._open_wait()
        try:
            fcntl.flock(wait_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        fcntl.flock(wait_fd, fcntl.LOCK_UN)
        return False

    def release(self) -> None:
        if self._fd is not None:
            fcntl.flock(self._fd, fcntl.LOCK_UN)

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)  # lets go of the lock too
            self._fd = None
        if self._wait_fd is not None:
            os.close(self._wait_fd)
            self._wait_fd = None

    def _open(self) -> int:
        if self._fd is None:
            self._fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        return self._fd

    def _open_wait(self) -> int:
        if self._wait_fd is None:
            self._wait_fd = os.open(self.wait_path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        return self._wait_fd

    def _release_if_taken(self, waited: asyncio.Future[None]) -> None:
        if not waited.cancelled() and waited.exception() is None:
            with contextlib.suppress(OSError):
                self.release()
