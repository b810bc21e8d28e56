"""Widgets, their embed tokens, and the runs a widget shows (SQLAlchemy Core, both dialects). Always per tenant."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any, Literal

import sqlalchemy as sa

from flowdeck.domain.statuses import RunStatus
from flowdeck.storage.database import Connection, Database
from flowdeck.storage.tables import instances, workflows
from flowdeck.storage.widget_tables import embed_tokens, widgets

__all__ = (
    "EmbedAccess",
    "EmbedGrant",
    "EmbedTokenRecord",
    "FinishedRun",
    "WidgetFields",
    "WidgetKey",
    "WidgetRecord",
    "WidgetStore",
    "delete_widgets_of_workflow",
)

WidgetKey = tuple[float, str]
"""Position in the most-recently-updated-first widget list: (updated_at, id) of a page's last item."""


@dataclass(frozen=True, slots=True)
class WidgetFields:
    """What a client sets on a widget."""

    workflow_id: str
    name: str
    type: str
    mode: str
    config: dict[str, Any]
    frame_ancestors: list[str] | None


@dataclass(frozen=True, slots=True)
class WidgetRecord:
    id: str
    tenant_id: str
    workflow_id: str
    name: str
    type: str
    mode: str
    config: dict[str, Any]
    frame_ancestors: list[str] | None
    created_at: float
    updated_at: float


@dataclass(frozen=True, slots=True)
class EmbedTokenRecord:
    id: str
    widget_id: str
    prefix: str
    created_at: float
    expires_at: float
    revoked_at: float | None
    last_used_at: float | None


@dataclass(frozen=True, slots=True)
class EmbedGrant:
    """An embed token found by its hash, live or not, with its widget."""

    token: EmbedTokenRecord
    widget: WidgetRecord


@dataclass(frozen=True, slots=True)
class EmbedAccess:
    """What an embed token opens: its widget, or why not (``unknown`` is a 404, ``revoked``/``expired`` a 410)."""

    state: Literal["live", "unknown", "revoked", "expired"]
    widget: WidgetRecord | None = None
    token_id: str | None = None


@dataclass(frozen=True, slots=True)
class FinishedRun:
    """What a widget reads of a run."""

    id: str
    tenant_id: str
    workflow_id: str | None
    is_test: bool
    status: RunStatus
    output: Any
    error: str | None
    created_at: float
    completed_at: float | None


_p = sa.bindparam
_WIDGET_COLUMNS = tuple(widgets.c)
_TOKEN_COLUMNS = (
    embed_tokens.c.id,
    embed_tokens.c.widget_id,
    embed_tokens.c.prefix,
    embed_tokens.c.created_at,
    embed_tokens.c.expires_at,
    embed_tokens.c.revoked_at,
    embed_tokens.c.last_used_at,
)
_RUN_COLUMNS = (
    instances.c.id,
    instances.c.tenant_id,
    instances.c.workflow_id,
    instances.c.is_test,
    instances.c.status,
    instances.c.output,
    instances.c.error,
    instances.c.created_at,
    instances.c.completed_at,
)
# Built once: the embed page and the replay answer run these on every request.
_GRANT = (
    sa.select(*_TOKEN_COLUMNS, *_WIDGET_COLUMNS)
    .select_from(embed_tokens.join(widgets, widgets.c.id == embed_tokens.c.widget_id))
    .where(embed_tokens.c.token_hash == _p("p_hash"))
)
_TOUCH_TOKEN = embed_tokens.update().where(embed_tokens.c.id == _p("p_id")).values(last_used_at=_p("p_now"))
# The index (tenant_id, workflow_id, status, created_at, id) answers this by reading its last entries backwards.
_COMPLETED_RUNS = (
    sa.select(*_RUN_COLUMNS)
    .where(
        instances.c.workflow_id == _p("p_workflow"),
        instances.c.status == RunStatus.COMPLETED.value,
        instances.c.created_at < _p("p_before"),
        instances.c.is_test.is_(False),
        instances.c.tenant_id == _p("p_tenant"),
    )
    .order_by(instances.c.created_at.desc())
    .limit(_p("p_limit"))
)
_RUN = sa.select(*_RUN_COLUMNS).where(instances.c.id == _p("p_id"), instances.c.tenant_id == _p("p_tenant"))
_RUN_WORKFLOW = sa.select(instances.c.workflow_id, instances.c.is_test).where(instances.c.id == _p("p_id"))
_LIVE_WORKFLOW = sa.select(workflows.c.id).where(
    workflows.c.id == _p("p_workflow"), workflows.c.tenant_id == _p("p_tenant"), workflows.c.deleted_at.is_(None)
)


def _widget(row: Any) -> WidgetRecord:
    return WidgetRecord(*row)


def _run(row: Any) -> FinishedRun:
    return FinishedRun(row[0], row[1], row[2], bool(row[3]), RunStatus(row[4]), *row[5:])


async def delete_widgets_of_workflow(conn: Connection, workflow_id: str) -> None:
    """Delete a workflow's widgets and their embed tokens (inside the transaction that deletes the workflow)."""
    of_workflow = sa.select(widgets.c.id).where(widgets.c.workflow_id == workflow_id)
    await conn.execute(embed_tokens.delete().where(embed_tokens.c.widget_id.in_(of_workflow)))
    await conn.execute(widgets.delete().where(widgets.c.workflow_id == workflow_id))


class WidgetStore:
    def __init__(self, db: Database) -> None:
        self.db = db

    # -- widgets -----------------------------------------------------------------------------------
    async def create(self, tenant_id: str, fields: WidgetFields, now: float) -> WidgetRecord | None:
        """The new widget; ``None`` when the workflow is not one of the tenant's."""
        record = WidgetRecord(str(uuid.uuid4()), tenant_id, **_fields(fields), created_at=now, updated_at=now)
        async with self.db.transaction() as conn:
            if not await _workflow_is_live(conn, tenant_id, fields.workflow_id):
                return None
            await conn.execute(widgets.insert().values(**_values(record)))
        return record

    async def update(self, tenant_id: str, widget_id: str, fields: WidgetFields, now: float) -> WidgetRecord | None:
        """The saved widget; ``None`` when the widget is not the tenant's (check the workflow first)."""
        stmt = widgets.update().where(widgets.c.id == widget_id, widgets.c.tenant_id == tenant_id)
        async with self.db.transaction() as conn:
            result = await conn.execute(stmt.values(**_fields(fields), updated_at=now))
            if result.rowcount != 1:
                return None
            row = (await conn.execute(sa.select(*_WIDGET_COLUMNS).where(widgets.c.id == widget_id))).one()
        return _widget(row)

    async def workflow_is_live(self, tenant_id: str, workflow_id: str) -> bool:
        async with self.db.read() as conn:
            return await _workflow_is_live(conn, tenant_id, workflow_id)

    async def get(self, tenant_id: str, widget_id: str) -> WidgetRecord | None:
        stmt = sa.select(*_WIDGET_COLUMNS).where(widgets.c.id == widget_id, widgets.c.tenant_id == tenant_id)
        async with self.db.read() as conn:
            row = (await conn.execute(stmt)).first()
        return None if row is None else _widget(row)

    async def delete(self, tenant_id: str, widget_id: str) -> bool:
        """Delete a widget and its embed tokens."""
        owned = sa.and_(widgets.c.id == widget_id, widgets.c.tenant_id == tenant_id)
        async with self.db.transaction() as conn:
            if (await conn.execute(sa.select(widgets.c.id).where(owned))).first() is None:
                return False
            await conn.execute(embed_tokens.delete().where(embed_tokens.c.widget_id == widget_id))
            await conn.execute(widgets.delete().where(owned))
        return True

    async def page(
        self, tenant_id: str, workflow_id: str | None, after: WidgetKey | None, limit: int
    ) -> tuple[list[WidgetRecord], WidgetKey | None]:
        """A page of the tenant's widgets, most recently updated first, and the key of the next page."""
        stmt = sa.select(*_WIDGET_COLUMNS).where(widgets.c.tenant_id == tenant_id)
        if workflow_id is not None:
            stmt = stmt.where(widgets.c.workflow_id == workflow_id)
        if after is not None:
            updated, last_id = after
            stmt = stmt.where(
                sa.or_(widgets.c.updated_at < updated, sa.and_(widgets.c.updated_at == updated, widgets.c.id < last_id))
            )
        stmt = stmt.order_by(widgets.c.updated_at.desc(), widgets.c.id.desc()).limit(limit + 1)
        async with self.db.read() as conn:
            rows = (await conn.execute(stmt)).all()
        items = [_widget(row) for row in rows[:limit]]
        return items, ((items[-1].updated_at, items[-1].id) if len(rows) > limit else None)

    # -- embed tokens ------------------------------------------------------------------------------
    async def create_token(
        self, widget: WidgetRecord, token_hash: str, prefix: str, now: float, expires_at: float
    ) -> EmbedTokenRecord:
        record = EmbedTokenRecord(str(uuid.uuid4()), widget.id, prefix, now, expires_at, None, None)
        insert = embed_tokens.insert().values(
            id=record.id,
            tenant_id=widget.tenant_id,
            widget_id=widget.id,
            token_hash=token_hash,
            prefix=prefix,
            created_at=now,
            expires_at=expires_at,
        )
        async with self.db.transaction() as conn:
            await conn.execute(insert)
        return record

    async def list_tokens(self, tenant_id: str, widget_id: str) -> list[EmbedTokenRecord]:
        """Every token of the widget, revoked and expired ones too, newest first."""
        stmt = (
            sa.select(*_TOKEN_COLUMNS)
            .where(embed_tokens.c.widget_id == widget_id, embed_tokens.c.tenant_id == tenant_id)
            .order_by(embed_tokens.c.created_at.desc(), embed_tokens.c.id.desc())
        )
        async with self.db.read() as conn:
            return [EmbedTokenRecord(*row) for row in await conn.execute(stmt)]

    async def revoke_token(self, tenant_id: str, widget_id: str, token_id: str, now: float) -> bool:
        """Revoke a token of the widget (revoking one already revoked is fine); ``False``: no such token."""
        owned = sa.and_(
            embed_tokens.c.id == token_id,
            embed_tokens.c.widget_id == widget_id,
            embed_tokens.c.tenant_id == tenant_id,
        )
        async with self.db.transaction() as conn:
            if (await conn.execute(sa.select(embed_tokens.c.revoked_at).where(owned))).first() is None:
                return False
            live = embed_tokens.update().where(owned, embed_tokens.c.revoked_at.is_(None))
            await conn.execute(live.values(revoked_at=now))
        return True

    async def grant(self, token_hash: str) -> EmbedGrant | None:
        """The token with this hash and its widget (revoked or expired ones too: the caller tells them apart)."""
        async with self.db.read() as conn:
            row = (await conn.execute(_GRANT, {"p_hash": token_hash})).first()
        return None if row is None else EmbedGrant(EmbedTokenRecord(*row[:7]), _widget(row[7:]))

    async def touch_token(self, token_id: str, now: float) -> None:
        async with self.db.transaction() as conn:
            await conn.execute(_TOUCH_TOKEN, {"p_id": token_id, "p_now": now})

    # -- the runs a widget shows -------------------------------------------------------------------
    async def completed_runs(
        self, tenant_id: str, workflow_id: str, *, before: float = float("inf"), limit: int = 1
    ) -> list[FinishedRun]:
        """The latest COMPLETED production runs of the workflow started before ``before``, newest first."""
        params = {"p_workflow": workflow_id, "p_tenant": tenant_id, "p_before": before, "p_limit": limit}
        async with self.db.read() as conn:
            return [_run(row) for row in await conn.execute(_COMPLETED_RUNS, params)]

    async def run(self, tenant_id: str, instance_id: str) -> FinishedRun | None:
        async with self.db.read() as conn:
            row = (await conn.execute(_RUN, {"p_id": instance_id, "p_tenant": tenant_id})).first()
        return None if row is None else _run(row)

    async def run_workflow(self, instance_id: str) -> tuple[str | None, bool] | None:
        """(workflow id, is test) of a run, whatever its tenant (the Socket.IO notifier's lookup)."""
        async with self.db.read() as conn:
            row = (await conn.execute(_RUN_WORKFLOW, {"p_id": instance_id})).first()
        return None if row is None else (row[0], bool(row[1]))


async def _workflow_is_live(conn: Connection, tenant_id: str, workflow_id: str) -> bool:
    row = (await conn.execute(_LIVE_WORKFLOW, {"p_workflow": workflow_id, "p_tenant": tenant_id})).first()
    return row is not None


def _fields(fields: WidgetFields) -> dict[str, Any]:
    return {
        "workflow_id": fields.workflow_id,
        "name": fields.name,
        "type": fields.type,
        "mode": fields.mode,
        "config": fields.config,
        "frame_ancestors": fields.frame_ancestors,
    }


def _values(record: WidgetRecord) -> dict[str, Any]:
    return {column.name: getattr(record, column.name) for column in widgets.c}
