"""Saved workflows and their immutable, numbered versions (a run keeps the version it started on)."""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa

from flowdeck.storage.compiled import compile_each
from flowdeck.storage.database import Database
from flowdeck.storage.tables import workflow_versions, workflows
from flowdeck.storage.widgets import delete_widgets_of_workflow

__all__ = (
    "StaleVersionError",
    "VersionNote",
    "VersionSummary",
    "WorkflowKey",
    "WorkflowRecord",
    "WorkflowStore",
    "WorkflowSummary",
)


_LATEST_VERSION = compile_each(  # read at every production run's start: run on the driver
    sa.select(workflows.c.latest_version).where(
        workflows.c.id == sa.bindparam("p_id"),
        workflows.c.tenant_id == sa.bindparam("p_tenant"),
        workflows.c.deleted_at.is_(None),
    )
)


class StaleVersionError(Exception):
    """A save carried a version other than the latest: someone saved in between."""

    def __init__(self, workflow_id: str, given: int, latest: int) -> None:
        super().__init__(f"workflow {workflow_id} is at version {latest}, the save was based on version {given}")
        self.latest = latest


@dataclass(frozen=True, slots=True)
class WorkflowRecord:
    id: str
    tenant_id: str
    title: str
    description: str | None
    version: int
    definition: Any
    created_at: float
    updated_at: float


@dataclass(frozen=True, slots=True)
class WorkflowSummary:
    id: str
    title: str
    description: str | None
    version: int
    created_at: float
    updated_at: float


@dataclass(frozen=True, slots=True)
class VersionNote:
    """Who saved a version (the user's email) and what they said about it; both optional."""

    author: str | None = None
    message: str | None = None


@dataclass(frozen=True, slots=True)
class VersionSummary:
    version: int
    title: str
    created_at: float
    author: str | None = None
    message: str | None = None


WorkflowKey = tuple[float, str]
"""Position in the most-recently-updated-first workflow list: (updated_at, id) of a page's last item."""


class WorkflowStore:
    def __init__(self, db: Database) -> None:
        self.db = db

    async def create(
        self, tenant_id: str, definition: dict[str, Any], note: VersionNote | None = None
    ) -> WorkflowRecord:
        workflow_id, now = str(uuid.uuid4()), time.time()
        note = note or VersionNote()
        async with self.db.transaction() as conn:
            await conn.execute(
                workflows.insert().values(
                    id=workflow_id,
                    tenant_id=tenant_id,
                    title=str(definition.get("title") or "Untitled workflow"),
                    description=definition.get("description"),
                    latest_version=1,
                    created_at=now,
                    updated_at=now,
                )
            )
            await conn.execute(
                workflow_versions.insert().values(
                    workflow_id=workflow_id,
                    version=1,
                    definition=definition,
                    created_at=now,
                    author=note.author,
                    message=note.message,
                )
            )
        return WorkflowRecord(
            workflow_id,
            tenant_id,
            str(definition.get("title") or "Untitled workflow"),
            definition.get("description"),
            1,
            definition,
            now,
            now,
        )

    async def save_version(
        self,
        tenant_id: str,
        workflow_id: str,
        based_on: int,
        definition: dict[str, Any],
        note: VersionNote | None = None,
    ) -> int:
        """Store ``definition`` as the next version; ``StaleVersionError`` if ``based_on`` is not the latest."""
        now = time.time()
        note = note or VersionNote()
        async with self.db.transaction() as conn:
            result = await conn.execute(
                workflows.update()
                .where(
                    workflows.c.id == workflow_id,
                    workflows.c.tenant_id == tenant_id,
                    workflows.c.latest_version == based_on,
                    workflows.c.deleted_at.is_(None),
                )
                .values(
                    latest_version=based_on + 1,
                    updated_at=now,
                    title=str(definition.get("title") or "Untitled workflow"),
                    description=definition.get("description"),
                )
            )
            if result.rowcount != 1:
                latest = (
                    await conn.execute(
                        sa.select(workflows.c.latest_version).where(
                            workflows.c.id == workflow_id, workflows.c.tenant_id == tenant_id
                        )
                    )
                ).scalar_one_or_none()
                if latest is None:
                    raise LookupError(workflow_id)
                raise StaleVersionError(workflow_id, based_on, latest)
            await conn.execute(
                workflow_versions.insert().values(
                    workflow_id=workflow_id,
                    version=based_on + 1,
                    definition=definition,
                    created_at=now,
                    author=note.author,
                    message=note.message,
                )
            )
        return based_on + 1

    async def get(self, tenant_id: str, workflow_id: str, version: int | None = None) -> WorkflowRecord | None:
        """The latest version (or ``version``) of a workflow of this tenant."""
        join = workflows.join(workflow_versions, workflow_versions.c.workflow_id == workflows.c.id)
        stmt = (
            sa.select(
                workflows.c.id,
                workflows.c.tenant_id,
                workflows.c.title,
                workflows.c.description,
                workflow_versions.c.version,
                workflow_versions.c.definition,
                workflows.c.created_at,
                workflows.c.updated_at,
            )
            .select_from(join)
            .where(
                workflows.c.id == workflow_id,
                workflows.c.tenant_id == tenant_id,
                workflows.c.deleted_at.is_(None),
                workflow_versions.c.version == (workflows.c.latest_version if version is None else version),
            )
        )
        async with self.db.read() as conn:
            row = (await conn.execute(stmt)).first()
        return None if row is None else WorkflowRecord(*row)

    async def latest_version(self, tenant_id: str, workflow_id: str) -> int | None:
        """The latest version number of a workflow of this tenant (``None``: no such workflow)."""
        async with self.db.read(snapshot=False) as conn:  # one statement: no BEGIN and ROLLBACK around it
            parameters = {"p_id": workflow_id, "p_tenant": tenant_id}
            version = (await conn.execute(_LATEST_VERSION.on(self.db.is_sqlite), parameters)).scalar_one_or_none()
        return None if version is None else int(version)

    async def definition(self, workflow_id: str, version: int) -> Any:
        """A stored version's definition, whatever its tenant (the engine's lookup; versions never change)."""
        stmt = sa.select(workflow_versions.c.definition).where(
            workflow_versions.c.workflow_id == workflow_id, workflow_versions.c.version == version
        )
        async with self.db.read() as conn:
            return (await conn.execute(stmt)).scalar_one_or_none()

    async def delete(self, tenant_id: str, workflow_id: str) -> bool:
        """Hide a workflow and delete its widgets; its versions stay so the runs that used them can still be read."""
        async with self.db.transaction() as conn:
            result = await conn.execute(
                workflows.update()
                .where(
                    workflows.c.id == workflow_id, workflows.c.tenant_id == tenant_id, workflows.c.deleted_at.is_(None)
                )
                .values(deleted_at=time.time())
            )
            if result.rowcount != 1:
                return False
            await delete_widgets_of_workflow(conn, workflow_id)
        return True

    async def list_summaries(
        self, tenant_id: str, after: WorkflowKey | None, limit: int, query: str | None = None
    ) -> tuple[list[WorkflowSummary], WorkflowKey | None]:
        """A page of the tenant's workflows, most recently updated first, and the key of the next page;
        ``query``: only those whose title contains it (any case)."""
        stmt = sa.select(
            workflows.c.id,
            workflows.c.title,
            workflows.c.description,
            workflows.c.latest_version,
            workflows.c.created_at,
            workflows.c.updated_at,
        ).where(workflows.c.tenant_id == tenant_id, workflows.c.deleted_at.is_(None))
        if query:
            stmt = stmt.where(workflows.c.title.icontains(query, autoescape=True))
        if after is not None:
            updated, last_id = after
            stmt = stmt.where(
                sa.or_(
                    workflows.c.updated_at < updated,
                    sa.and_(workflows.c.updated_at == updated, workflows.c.id < last_id),
                )
            )
        stmt = stmt.order_by(workflows.c.updated_at.desc(), workflows.c.id.desc()).limit(limit + 1)
        async with self.db.read() as conn:
            rows = (await conn.execute(stmt)).all()
        items = [WorkflowSummary(*row) for row in rows[:limit]]
        return items, ((items[-1].updated_at, items[-1].id) if len(rows) > limit else None)

    async def list_versions(
        self, tenant_id: str, workflow_id: str, before: int | None, limit: int
    ) -> tuple[list[VersionSummary], int | None] | None:
        """A page of versions, newest first, and the version to continue before; ``None``: no such workflow."""
        owner = sa.select(workflows.c.id).where(
            workflows.c.id == workflow_id, workflows.c.tenant_id == tenant_id, workflows.c.deleted_at.is_(None)
        )
        stmt = sa.select(
            workflow_versions.c.version,
            workflow_versions.c.definition,
            workflow_versions.c.created_at,
            workflow_versions.c.author,
            workflow_versions.c.message,
        )
        stmt = stmt.where(workflow_versions.c.workflow_id == workflow_id)
        if before is not None:
            stmt = stmt.where(workflow_versions.c.version < before)
        stmt = stmt.order_by(workflow_versions.c.version.desc()).limit(limit + 1)
        async with self.db.read() as conn:
            if (await conn.execute(owner)).first() is None:
                return None
            rows = (await conn.execute(stmt)).all()
        items = [VersionSummary(row[0], _title(row[1]), row[2], row[3], row[4]) for row in rows[:limit]]
        return items, (items[-1].version if len(rows) > limit else None)


def _title(definition: Any) -> str:
    title = definition.get("title") if isinstance(definition, dict) else None
    return str(title or "Untitled workflow")
