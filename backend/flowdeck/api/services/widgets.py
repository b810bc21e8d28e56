"""Widgets: create, read, save, delete, list; their embed tokens; and what an embed token opens."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Final, cast

from litestar.exceptions import NotFoundException

from flowdeck.accounts.credentials import hash_secret, is_embed_token, new_embed_token
from flowdeck.accounts.revocation import RevocationSink, embed_token_key, ignore_revocations, widget_key
from flowdeck.api.inputs import check_json
from flowdeck.api.pagination import TimeKey, decode_cursor, encode_cursor
from flowdeck.api.widget_schemas import (
    EmbedTokenCreated,
    EmbedTokenOut,
    EmbedTokenPage,
    WidgetIn,
    WidgetMode,
    WidgetOut,
    WidgetPage,
    WidgetTypeName,
)
from flowdeck.storage.widgets import EmbedAccess, EmbedTokenRecord, WidgetFields, WidgetRecord, WidgetStore
from flowdeck.widgets.config import parse_config
from flowdeck.widgets.frames import check_frame_ancestors

__all__ = ("EmbedAccess", "WidgetService")

TOKEN_TOUCH_SECONDS: Final = 60.0
"""``lastUsedAt`` is written at most this often per token."""
_DAY: Final = 86_400.0


def _out(record: WidgetRecord) -> WidgetOut:
    return WidgetOut(
        id=record.id,
        workflow_id=record.workflow_id,
        name=record.name,
        type=cast(WidgetTypeName, record.type),  # checked before it was stored
        mode=cast(WidgetMode, record.mode),
        config=record.config,
        frame_ancestors=record.frame_ancestors,
        created_at=record.created_at,
        updated_at=record.updated_at,
    )


def _token_out(record: EmbedTokenRecord) -> EmbedTokenOut:
    return EmbedTokenOut(
        id=record.id,
        widget_id=record.widget_id,
        prefix=record.prefix,
        created_at=record.created_at,
        expires_at=record.expires_at,
        revoked_at=record.revoked_at,
        last_used_at=record.last_used_at,
    )


def _fields(body: WidgetIn) -> WidgetFields:
    """The checked fields of a body: a ``ConfigError`` (400) names the first field at fault."""
    check_json(config=body.config)
    parse_config(body.type, body.mode, body.config)
    return WidgetFields(
        workflow_id=body.workflow_id,
        name=body.name,
        type=body.type,
        mode=body.mode,
        config=body.config,
        frame_ancestors=check_frame_ancestors(body.frame_ancestors),
    )


def missing_widget(widget_id: str) -> NotFoundException:
    return NotFoundException(detail=f"widget {widget_id} not found")


def _missing_workflow(workflow_id: str) -> NotFoundException:
    return NotFoundException(
        detail=f"workflowId: workflow {workflow_id} not found", extra=[{"key": "workflowId", "source": "body"}]
    )


class WidgetService:
    def __init__(
        self,
        store: WidgetStore,
        clock: Callable[[], float] = time.time,
        on_revoke: RevocationSink = ignore_revocations,
    ) -> None:
        self.store = store
        self.clock = clock
        self.on_revoke = on_revoke
        """Told the embed tokens (and widgets) that went away: their live connections are closed."""

    # -- widgets -----------------------------------------------------------------------------------
    async def create(self, tenant_id: str, body: WidgetIn) -> WidgetOut:
        record = await self.store.create(tenant_id, _fields(body), self.clock())
        if record is None:
            raise _missing_workflow(body.workflow_id)
        return _out(record)

    async def require(self, tenant_id: str, widget_id: str) -> WidgetRecord:
        record = await self.store.get(tenant_id, widget_id)
        if record is None:
            raise missing_widget(widget_id)
        return record

    async def get(self, tenant_id: str, widget_id: str) -> WidgetOut:
        return _out(await self.require(tenant_id, widget_id))

    async def update(self, tenant_id: str, widget_id: str, body: WidgetIn) -> WidgetOut:
        await self.require(tenant_id, widget_id)  # another tenant's widget is a 404 before any 400
        fields = _fields(body)
        if not await self.store.workflow_is_live(tenant_id, body.workflow_id):
            raise _missing_workflow(body.workflow_id)
        record = await self.store.update(tenant_id, widget_id, fields, self.clock())
        if record is None:
            raise missing_widget(widget_id)
        return _out(record)

    async def delete(self, tenant_id: str, widget_id: str) -> None:
        if not await self.store.delete(tenant_id, widget_id):
            raise missing_widget(widget_id)
        self.on_revoke([widget_key(widget_id)])

    async def list(self, tenant_id: str, workflow_id: str | None, cursor: str | None, limit: int) -> WidgetPage:
        items, after = await self.store.page(tenant_id, workflow_id, decode_cursor(cursor, TimeKey), limit)
        return WidgetPage(items=[_out(r) for r in items], next_cursor=encode_cursor(after))

    # -- embed tokens ------------------------------------------------------------------------------
    async def create_token(self, tenant_id: str, widget_id: str, expires_in_days: int) -> EmbedTokenCreated:
        widget = await self.require(tenant_id, widget_id)
        token, prefix = new_embed_token()
        now = self.clock()
        record = await self.store.create_token(widget, hash_secret(token), prefix, now, now + expires_in_days * _DAY)
        return EmbedTokenCreated(
            id=record.id,
            token=token,
            widget_id=widget.id,
            prefix=prefix,
            expires_at=record.expires_at,
            created_at=record.created_at,
            url=f"/embed/{token}",
        )

    async def list_tokens(self, tenant_id: str, widget_id: str) -> EmbedTokenPage:
        await self.require(tenant_id, widget_id)
        return EmbedTokenPage(items=[_token_out(r) for r in await self.store.list_tokens(tenant_id, widget_id)])

    async def revoke_token(self, tenant_id: str, widget_id: str, token_id: str) -> None:
        await self.require(tenant_id, widget_id)
        if not await self.store.revoke_token(tenant_id, widget_id, token_id, self.clock()):
            raise NotFoundException(detail=f"embed token {token_id} not found")
        self.on_revoke([embed_token_key(token_id)])

    async def open_embed(self, token: str) -> EmbedAccess:
        """What ``token`` opens now; a live token's ``lastUsedAt`` is refreshed (at most once a minute)."""
        if not is_embed_token(token):
            return EmbedAccess("unknown")
        grant = await self.store.grant(hash_secret(token))
        if grant is None:
            return EmbedAccess("unknown")
        now, record = self.clock(), grant.token
        if record.revoked_at is not None:
            return EmbedAccess("revoked")
        if record.expires_at <= now:
            return EmbedAccess("expired")
        if record.last_used_at is None or now - record.last_used_at > TOKEN_TOUCH_SECONDS:
            await self.store.touch_token(record.id, now)
        return EmbedAccess("live", grant.widget, record.id)
