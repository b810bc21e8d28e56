"""The services the API and the Socket.IO server share, built once the runtime is open."""

from __future__ import annotations

from dataclasses import dataclass

from flowdeck.accounts.passwords import PasswordService
from flowdeck.accounts.rate_limit import LoginRateLimiter
from flowdeck.accounts.service import AccountsService
from flowdeck.api.config import ApiConfig, RuntimeLike
from flowdeck.api.services.approvals import ApprovalService
from flowdeck.api.services.embed_limits import EmbedRunLimiter
from flowdeck.api.services.runs import RunService
from flowdeck.api.services.widget_data import WidgetDataService
from flowdeck.api.services.widgets import WidgetService
from flowdeck.api.services.workflows import WorkflowService
from flowdeck.engine.engine import Engine
from flowdeck.notifications.notifier import Notifier
from flowdeck.queries.service import DataService
from flowdeck.storage.run_queries import RunQueries
from flowdeck.storage.webhooks import WebhookStore
from flowdeck.storage.widgets import WidgetStore
from flowdeck.triggers.webhooks import WebhookService

__all__ = ("AppContext", "Services")


@dataclass(frozen=True, slots=True)
class Services:
    engine: Engine
    accounts: AccountsService
    workflows: WorkflowService
    runs: RunService
    data: DataService
    widgets: WidgetService
    widget_data: WidgetDataService
    webhooks: WebhookService
    embed_limits: EmbedRunLimiter
    notifier: Notifier
    approvals: ApprovalService

    @classmethod
    def build(cls, runtime: RuntimeLike, config: ApiConfig) -> Services:
        engine = runtime.engine
        revoke = engine.publisher.revoke  # closes the revoked credentials' live connections, in every process
        accounts = AccountsService(
            runtime.db,
            PasswordService(config.password_hasher),
            LoginRateLimiter(runtime.db, config.login_limits),
            on_revoke=revoke,
        )
        queries = RunQueries(runtime.db, engine.state)
        widgets = WidgetStore(runtime.db)
        notifier = getattr(runtime, "notifier", None) or Notifier(
            engine, runtime.data.store.secret_box, runtime.data.engine.outbound
        )
        workflows = WorkflowService(engine, notifier)
        return cls(
            engine,
            accounts,
            workflows,
            RunService(engine, queries, workflows.checks),
            runtime.data,
            WidgetService(widgets, on_revoke=revoke),
            WidgetDataService(widgets, engine),
            WebhookService(WebhookStore(runtime.db), engine, accounts),
            EmbedRunLimiter(runtime.db),
            notifier,
            ApprovalService(engine),
        )


class AppContext:
    """Holds the services while the app runs (the Socket.IO server exists before the lifespan starts)."""

    def __init__(self) -> None:
        self._services: Services | None = None

    @property
    def services(self) -> Services:
        if self._services is None:
            raise RuntimeError("the application is not running")
        return self._services

    @property
    def running(self) -> bool:
        return self._services is not None

    def open(self, services: Services) -> None:
        self._services = services

    def close(self) -> None:
        self._services = None
