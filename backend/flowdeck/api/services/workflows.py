"""Workflows: create, read, save new versions, delete, list, version history, validate."""

from __future__ import annotations

from typing import Any

from litestar.exceptions import NotFoundException

from flowdeck.accounts.revocation import workflow_key
from flowdeck.api.inputs import check_json, json_problems
from flowdeck.api.pagination import NumberKey, TimeKey, decode_cursor, encode_cursor
from flowdeck.api.schemas import (
    DefinitionFields,
    ValidationOut,
    VersionOut,
    VersionPage,
    WorkflowCreate,
    WorkflowOut,
    WorkflowPage,
    WorkflowSave,
    WorkflowSummaryOut,
)
from flowdeck.domain.problems import has_errors
from flowdeck.engine.engine import DefinitionInvalidError, Engine
from flowdeck.notifications.notifier import Notifier
from flowdeck.notifications.targets import shape_problems
from flowdeck.storage.workflows import WorkflowRecord

__all__ = ("WorkflowService", "definition_of")


def definition_of(body: DefinitionFields) -> dict[str, Any]:
    """The definition JSON a body describes (only the fields that were given), checked for unstorable values."""
    definition: dict[str, Any] = {"nodes": body.nodes, "edges": body.edges}
    for key in ("title", "description", "options", "notes"):
        value = getattr(body, key)
        if value is not None:
            definition[key] = value
    check_json(nodes=body.nodes, edges=body.edges, options=body.options, notes=body.notes)
    return definition


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

    async def _check_notifications(self, tenant_id: str, definition: dict[str, Any]) -> None:
        """options.onFailure / onSlaBreach: the error workflow is the tenant's, the URL may be reached."""
        options = definition.get("options")
        if not isinstance(options, dict) or shape_problems(options):
            return  # no targets, or their form is wrong: the definition's validation reports that
        problems = await self.notifier.target_problems(tenant_id, definition)
        if problems:
            raise DefinitionInvalidError(problems)

    async def create(self, tenant_id: str, body: WorkflowCreate) -> WorkflowOut:
        definition = definition_of(body)
        await self._check_notifications(tenant_id, definition)
        record = await self.engine.create_workflow(tenant_id, definition)
        await self.notifier.saved(tenant_id, record.id, definition)
        return _out(record)

    async def get(self, tenant_id: str, workflow_id: str, version: int | None = None) -> WorkflowOut:
        record = await self.store.get(tenant_id, workflow_id, version)
        if record is None:
            raise _missing(workflow_id, version)
        return _out(record)

    async def save(self, tenant_id: str, workflow_id: str, body: WorkflowSave) -> WorkflowOut:
        if await self.store.get(tenant_id, workflow_id) is None:
            raise _missing(workflow_id)
        definition = definition_of(body)
        await self._check_notifications(tenant_id, definition)
        try:
            version = await self.engine.save_workflow(tenant_id, workflow_id, body.version, definition)
        except LookupError as exc:  # deleted in between
            raise _missing(workflow_id) from exc
        await self.notifier.saved(tenant_id, workflow_id, definition)
        return await self.get(tenant_id, workflow_id, version)

    async def delete(self, tenant_id: str, workflow_id: str) -> None:
        if not await self.engine.delete_workflow(tenant_id, workflow_id):
            raise _missing(workflow_id)
        self.engine.publisher.revoke([workflow_key(workflow_id)])  # its widgets' embed links are gone

    async def list(self, tenant_id: str, cursor: str | None, limit: int) -> WorkflowPage:
        items, after = await self.store.list_summaries(tenant_id, decode_cursor(cursor, TimeKey), limit)
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
            items=[VersionOut(version=v.version, title=v.title, created_at=v.created_at) for v in items],
            next_cursor=encode_cursor(before),
        )

    def validate(self, raw: Any, raw_size: int | None) -> ValidationOut:
        problems = json_problems(raw, "") or self.engine.validate(raw, raw_size=raw_size)
        return ValidationOut(valid=not has_errors(problems), problems=problems)
