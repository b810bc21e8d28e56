"""Workflows: create, read, save new versions, delete, list, version history, validate."""

from __future__ import annotations

from typing import Any

from litestar.exceptions import NotFoundException

from flowdeck.accounts.revocation import workflow_key
from flowdeck.api.pagination import NumberKey, TimeKey, decode_cursor, encode_cursor
from flowdeck.api.schemas import (
    ValidationOut,
    VersionOut,
    VersionPage,
    VersionRestore,
    WorkflowCreate,
    WorkflowOut,
    WorkflowPage,
    WorkflowSave,
    WorkflowSummaryOut,
)
from flowdeck.api.services.definition_checks import SaveChecks, definition_of, read_body
from flowdeck.domain.problems import has_errors
from flowdeck.engine.engine import Engine
from flowdeck.engine.publisher import SavedNotice
from flowdeck.notifications.notifier import Notifier
from flowdeck.storage.workflows import VersionNote, WorkflowRecord
from flowdeck.validation.inputs import workflow_inputs

__all__ = ("WorkflowService",)


def _out(record: WorkflowRecord) -> WorkflowOut:
    d: dict[str, Any] = record.definition if isinstance(record.definition, dict) else {}
    return WorkflowOut(
        id=record.id,
        version=record.version,
        title=str(d.get("title") or record.title),  # the version's own, not the latest one's
        description=d.get("description"),
        options=d.get("options"),
        nodes=d.get("nodes") or [],
        edges=d.get("edges") or [],
        notes=d.get("notes") or [],
        inputs=workflow_inputs(d),
        created_at=record.created_at,
        updated_at=record.updated_at,
    )


def _missing(workflow_id: str, version: int | None = None) -> NotFoundException:
    if version is None:
        return NotFoundException(detail=f"workflow {workflow_id} not found")
    return NotFoundException(detail=f"workflow {workflow_id} has no version {version}")


class WorkflowService:
    def __init__(self, engine: Engine, notifier: Notifier) -> None:
        self.engine = engine
        self.store = engine.workflows
        self.notifier = notifier
        self.checks = SaveChecks(engine, notifier)

    async def create(self, tenant_id: str, body: WorkflowCreate, author: str | None = None) -> WorkflowOut:
        definition = definition_of(body)
        await self.checks.require(tenant_id, definition)
        record = await self.engine.create_workflow(tenant_id, definition, VersionNote(author))
        await self.notifier.saved(tenant_id, record.id, definition)
        return _out(record)

    async def get(self, tenant_id: str, workflow_id: str, version: int | None = None) -> WorkflowOut:
        record = await self.store.get(tenant_id, workflow_id, version)
        if record is None:
            raise _missing(workflow_id, version)
        return _out(record)

    async def save(
        self, tenant_id: str, workflow_id: str, body: WorkflowSave, author: str | None = None
    ) -> WorkflowOut:
        if await self.store.get(tenant_id, workflow_id) is None:
            raise _missing(workflow_id)
        definition = definition_of(body)
        note = VersionNote(author, (body.version_message or "").strip() or None)
        return await self._save(tenant_id, workflow_id, body.version, definition, note)

    async def restore(
        self, tenant_id: str, workflow_id: str, version: int, body: VersionRestore | None, author: str | None = None
    ) -> WorkflowOut:
        """Save version ``version``'s definition again, as the next version (nothing is lost: history only grows)."""
        old = await self.store.get(tenant_id, workflow_id, version)
        latest = await self.store.latest_version(tenant_id, workflow_id)
        if old is None or latest is None:
            raise _missing(workflow_id, version if latest is not None else None)
        message = ((body.version_message if body else None) or "").strip() or f"Restored version {version}"
        return await self._save(tenant_id, workflow_id, latest, dict(old.definition), VersionNote(author, message))

    async def _save(
        self, tenant_id: str, workflow_id: str, based_on: int, definition: dict[str, Any], note: VersionNote
    ) -> WorkflowOut:
        await self.checks.require(tenant_id, definition, workflow_id)
        try:
            version = await self.engine.save_workflow(tenant_id, workflow_id, based_on, definition, note)
        except LookupError as exc:  # deleted in between
            raise _missing(workflow_id) from exc
        await self.notifier.saved(tenant_id, workflow_id, definition)
        saved = await self.get(tenant_id, workflow_id, version)
        # the live notice to the workflow's editors, in every process (realtime/server.py, engine/fanout.py)
        self.engine.publisher.notice(SavedNotice(tenant_id, workflow_id, version, note.author, note.message))
        return saved

    async def delete(self, tenant_id: str, workflow_id: str) -> None:
        if not await self.engine.delete_workflow(tenant_id, workflow_id):
            raise _missing(workflow_id)
        self.engine.publisher.revoke([workflow_key(workflow_id)])  # its widgets' embed links are gone

    async def list(self, tenant_id: str, cursor: str | None, limit: int, query: str | None = None) -> WorkflowPage:
        items, after = await self.store.list_summaries(tenant_id, decode_cursor(cursor, TimeKey), limit, query)
        return WorkflowPage(
            items=[
                WorkflowSummaryOut(
                    id=w.id,
                    title=w.title,
                    description=w.description,
                    version=w.version,
                    created_at=w.created_at,
                    updated_at=w.updated_at,
                )
                for w in items
            ],
            next_cursor=encode_cursor(after),
        )

    async def versions(self, tenant_id: str, workflow_id: str, cursor: str | None, limit: int) -> VersionPage:
        page = await self.store.list_versions(tenant_id, workflow_id, decode_cursor(cursor, NumberKey), limit)
        if page is None:
            raise _missing(workflow_id)
        items, before = page
        return VersionPage(
            items=[
                VersionOut(
                    version=v.version, title=v.title, created_at=v.created_at, author=v.author, message=v.message
                )
                for v in items
            ],
            next_cursor=encode_cursor(before),
        )

    async def validate(
        self, tenant_id: str, raw: Any, raw_size: int | None, workflow_id: str | None = None
    ) -> ValidationOut:
        """What saving ``raw`` (a create body) would answer, as problems; ``workflow_id``: the saved workflow
        it is an edit of (a node that calls that workflow gets a warning)."""
        body, problems = read_body(raw)
        if body is not None:
            problems = await self.checks.problems(tenant_id, definition_of(body), workflow_id, raw_size)
        return ValidationOut(valid=not has_errors(problems), problems=problems)
