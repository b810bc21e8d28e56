"""The latest version of each workflow as this process last saw it, so that a production run's start need not
read it first: PostgreSQL's one-statement start checks it is still the latest in the statement that creates the
run, and refuses (``LatestVersionChangedError``) when a save or a delete came in between, after which the engine
reads it and starts again (engine/engine.py ``start_workflow_run``). A stale entry thus costs one refused
statement, never a run of an old version.

Learnt from reads, from this process's saves, and from other processes' saved-version notices (engine/fanout.py).
"""

from __future__ import annotations

from typing import Final

__all__ = ("LatestVersions",)

_MOST: Final = 10_000
"""Workflows remembered at most (all forgotten when full: each costs one read to learn again)."""


class LatestVersions:
    def __init__(self) -> None:
        self._seen: dict[tuple[str, str], int] = {}

    def get(self, tenant_id: str, workflow_id: str) -> int | None:
        return self._seen.get((tenant_id, workflow_id))

    def saw(self, tenant_id: str, workflow_id: str, version: int) -> None:
        """``version`` is the latest as of now (a later one already seen stays: notices may come out of order)."""
        key = (tenant_id, workflow_id)
        if version <= self._seen.get(key, 0):
            return
        if len(self._seen) >= _MOST:
            self._seen.clear()
        self._seen[key] = version

    def forget(self, tenant_id: str, workflow_id: str) -> None:
        self._seen.pop((tenant_id, workflow_id), None)
