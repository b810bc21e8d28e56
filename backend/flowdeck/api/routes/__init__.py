"""The route handlers, one module per resource."""

from __future__ import annotations

from litestar.types import ControllerRouterHandler

from flowdeck.api.routes.approvals import ApprovalController
from flowdeck.api.routes.auth import AuthController
from flowdeck.api.routes.data import DataSourceController, QueryController
from flowdeck.api.routes.embed import EmbedController
from flowdeck.api.routes.examples import ExampleController
from flowdeck.api.routes.health import health
from flowdeck.api.routes.hooks import HookController, WebhookController
from flowdeck.api.routes.notifications import NotificationController
from flowdeck.api.routes.runs import RunController
from flowdeck.api.routes.settings import SettingsController
from flowdeck.api.routes.templates import TemplateController
from flowdeck.api.routes.testruns import TestRunController
from flowdeck.api.routes.tokens import TokenController
from flowdeck.api.routes.waits import FormController, ResumeController
from flowdeck.api.routes.widgets import WidgetController
from flowdeck.api.routes.workflows import WorkflowController

__all__ = ("API_ROUTES",)

API_ROUTES: list[ControllerRouterHandler] = [
    health,
    AuthController,
    TokenController,
    WorkflowController,
    ExampleController,
    WebhookController,
    NotificationController,
    HookController,
    RunController,
    TestRunController,
    TemplateController,
    DataSourceController,
    QueryController,
    WidgetController,
    EmbedController,
    ResumeController,
    FormController,
    ApprovalController,
    SettingsController,
]
