"""The Litestar application: routes, authentication, error mapping and OpenAPI (``/schema``)."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractAsyncContextManager

from litestar import Litestar
from litestar.datastructures import ResponseHeader, State
from litestar.openapi import OpenAPIConfig
from litestar.openapi.spec import Components, SecurityScheme

from flowdeck.api.auth import SESSION_COOKIE, auth_middleware
from flowdeck.api.body_checks import check_body
from flowdeck.api.config import ApiConfig, ReadyInfo
from flowdeck.api.context import AppContext, Services
from flowdeck.api.dependencies import DEPENDENCIES
from flowdeck.api.errors import EXCEPTION_HANDLERS
from flowdeck.api.frame_headers import add_frame_headers
from flowdeck.api.replay import replay_lost_writes
from flowdeck.api.routes import API_ROUTES
from flowdeck.api.routes.metrics import metrics as metrics_route
from flowdeck.api.routes.spa import spa_routes
from flowdeck.api.schema_page import LocalSwaggerRenderPlugin
from flowdeck.observability.metrics import Metrics
from flowdeck.triggers.webhooks import SECRET_HEADER

__all__ = ("Lifespan", "announce_ready", "create_api")

Lifespan = Callable[[Litestar], AbstractAsyncContextManager[None]]


def _openapi() -> OpenAPIConfig:
    return OpenAPIConfig(
        title="Flowdeck API",
        version="1",
        description="Workflows, runs and accounts. Live run updates are on Socket.IO at /socket.io (SPEC §9).",
        path="/schema",
        render_plugins=[LocalSwaggerRenderPlugin("/schema", path=["/", "/swagger"])],  # offline: no CDN
        components=Components(
            security_schemes={
                "token": SecurityScheme(type="http", scheme="bearer", description="an API token (POST /api/tokens)"),
                "session": SecurityScheme(
                    type="apiKey", name=SESSION_COOKIE, security_scheme_in="cookie", description="browser session"
                ),
                "webhookSecret": SecurityScheme(
                    type="apiKey",
                    name=SECRET_HEADER,
                    security_scheme_in="header",
                    description="a workflow's webhook secret (POST /api/workflows/{id}/webhook/secret); /hooks only",
                ),
            }
        ),
    )


def create_api(
    config: ApiConfig,
    context: AppContext,
    lifespan: Lifespan,
    metrics: Metrics | None = None,
    metrics_token: str | None = None,
) -> Litestar:
    state = {"context": context, "embed_page": config.static_dir / "embed.html", "metrics": metrics}
    return Litestar(
        route_handlers=[*API_ROUTES, metrics_route, *spa_routes(config.static_dir)],  # the SPA catch-all last
        dependencies=DEPENDENCIES,
        middleware=[replay_lost_writes, auth_middleware()],
        before_request=check_body,
        before_send=[add_frame_headers],
        exception_handlers=EXCEPTION_HANDLERS,
        openapi_config=_openapi(),
        lifespan=[lifespan],
        state=State({**state, "metrics_token": metrics_token}),
        request_max_body_size=config.max_body_bytes,
        response_headers=[ResponseHeader(name="X-Content-Type-Options", value="nosniff")],
        # Logging is the command's (flowdeck.observability.logs: quiet text or JSON lines); Litestar's own
        # set-up would put the root logger back at INFO in its own format (alembic's lines on every start).
        logging_config=None,
    )


async def announce_ready(services: Services, config: ApiConfig) -> None:
    """Make the first user and its login link on an empty database (when asked), then call ``on_ready``."""
    info = ReadyInfo()
    if config.bootstrap_admin:
        created = await services.accounts.bootstrap()
        if created is not None:
            user, password, secret = created
            info = ReadyInfo(login_path=f"/api/auth/link/{secret}", email=user.email, password=password)
    if config.on_ready is not None:
        config.on_ready(info)
