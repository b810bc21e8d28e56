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
from flowdeck.validation.inputs import workflow_inputs

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

    async def _check_references(self, tenant_id: str, definition: dict[str, Any], own_id: str | None = None) -> None:
        """What the definition points at must be the tenant's: the workflows its ``workflow`` nodes call, the
        error workflows of options.onFailure / onSlaBreach; and a notification URL must be reachable."""
        problems = await self.engine.call_problems(tenant_id, definition, own_id)
        options = definition.get("options")
        if isinstance(options, dict) and not shape_problems(options):  # else validation reports the form
            problems += await self.notifier.target_problems(tenant_id, definition)
        if has_errors(problems):
            raise DefinitionInvalidError(problems)

    async def create(self, tenant_id: str, body: WorkflowCreate) -> WorkflowOut:
        definition = definition_of(body)
        await self._check_references(tenant_id, definition)
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
        await self._check_references(tenant_id, definition, workflow_id)
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
            items=[VersionOut(version=v.version, title=v.title, created_at=v.created_at) for v in items],
            next_cursor=encode_cursor(before),
        )

    async def validate(
        self, tenant_id: str, raw: Any, raw_size: int | None, workflow_id: str | None = None
    ) -> ValidationOut:
        """Every problem of a definition; ``workflow_id``: the saved workflow it is an edit of (a node that
        calls that workflow gets a warning)."""
        problems = json_problems(raw, "") or self.engine.validate(raw, raw_size=raw_size)
        if not problems or not has_errors(problems):
            problems = [*problems, *await self.engine.call_problems(tenant_id, raw, workflow_id)]
        return ValidationOut(valid=not has_errors(problems), problems=problems)
