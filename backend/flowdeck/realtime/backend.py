"""What the realtime server asks of the rest of Flowdeck, as a protocol: it imports no API code.

The API implements it over its services (``api/live.py``); a test may give it anything that fits.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any, Protocol

from flowdeck.accounts.principal import Principal
from flowdeck.storage.run_queries import RunView
from flowdeck.storage.widgets import EmbedAccess, WidgetRecord

__all__ = ("LiveBackend", "WidgetAnswer")

WidgetAnswer = dict[str, Any]
"""A widget's processed data, as ``GET /embed/{token}/data`` answers it (JSON, camelCase keys)."""


class LiveBackend(Protocol):
    @property
    def running(self) -> bool:
        """Whether the services are open (the server exists before the app starts and after it stops)."""

    async def authenticate_token(self, token: str) -> Principal | None: ...

    async def authenticate_session(self, cookie: str) -> Principal | None: ...

    async def open_embed(self, token: str) -> EmbedAccess: ...

    async def live_credentials(self, keys: Collection[str]) -> set[str]:
        """Those of ``keys`` (``accounts/revocation.py``) whose credential is still good now."""

    async def owns_workflow(self, tenant_id: str, workflow_id: str) -> bool:
        """Whether the tenant has this (undeleted) workflow."""

    async def run_view(self, tenant_id: str, run_id: str) -> RunView | None:
        """The run's snapshot, ``None`` when it is unknown to the tenant."""

    async def run_workflow(self, run_id: str) -> tuple[str | None, bool] | None:
        """(workflow id, is test) of a run, whatever its tenant."""

    async def widget_answer(self, widget: WidgetRecord, run_id: str | None) -> WidgetAnswer | None:
        """The widget's data: for ``run_id`` (a production run of its workflow; ``None`` for any other run),
        or, without one, what its data endpoint answers now (a replay widget's latest COMPLETED run).
        ``None`` too when the widget no longer exists."""
