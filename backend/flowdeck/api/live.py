"""The realtime server's view of the API's services (``realtime.backend.LiveBackend``)."""

from __future__ import annotations

from collections.abc import Collection

import msgspec
from litestar.exceptions import NotFoundException

from flowdeck.accounts.live_check import live_credentials
from flowdeck.accounts.principal import Principal
from flowdeck.api.context import AppContext
from flowdeck.realtime.backend import LiveBackend, WidgetAnswer
from flowdeck.storage.run_queries import RunView
from flowdeck.storage.widgets import EmbedAccess, WidgetRecord

__all__ = ("ServicesBackend",)


class ServicesBackend(LiveBackend):
    def __init__(self, context: AppContext) -> None:
        self._context = context

    @property
    def running(self) -> bool:
        return self._context.running

    async def authenticate_token(self, token: str) -> Principal | None:
        return await self._context.services.accounts.authenticate_token(token)

    async def authenticate_session(self, cookie: str) -> Principal | None:
        return await self._context.services.accounts.authenticate_session(cookie)

    async def open_embed(self, token: str) -> EmbedAccess:
        return await self._context.services.widgets.open_embed(token)

    async def live_credentials(self, keys: Collection[str]) -> set[str]:
        accounts = self._context.services.accounts
        return await live_credentials(accounts.store.db, keys, accounts.clock())

    async def owns_workflow(self, tenant_id: str, workflow_id: str) -> bool:
        return await self._context.services.workflows.store.latest_version(tenant_id, workflow_id) is not None

    async def run_view(self, tenant_id: str, run_id: str) -> RunView | None:
        return await self._context.services.runs.view(tenant_id, run_id)

    async def run_workflow(self, run_id: str) -> tuple[str | None, bool] | None:
        return await self._context.services.widgets.store.run_workflow(run_id)

    async def widget_answer(self, widget: WidgetRecord, run_id: str | None) -> WidgetAnswer | None:
        services = self._context.services
        current = await services.widgets.store.get(widget.tenant_id, widget.id)  # its config as saved now
        if current is None or (run_id is None and current.mode != "replay"):
            return None  # gone; or a sync widget, whose data endpoint would start a run
        try:
            if run_id is None:
                answer = await services.widget_data.of_widget(current, {}, public=True)
            else:
                answer = await services.widget_data.of_widget_run(current, run_id, public=True)
        except NotFoundException:
            return None
        encoded: WidgetAnswer = msgspec.to_builtins(answer)
        return encoded
