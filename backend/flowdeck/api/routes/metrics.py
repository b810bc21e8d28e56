"""``GET /metrics`` on the app's port: for a scraper holding ``FLOWDECK_METRICS_TOKEN`` only.

Without a token set it answers 404 like any unknown path (the operator scrapes the listener of
``FLOWDECK_METRICS_ADDR`` instead, ``observability/listener.py``); users' sessions and API tokens never
read it. ``FLOWDECK_METRICS=off``: 404 everywhere.
"""

from __future__ import annotations

from litestar import Request, Response, get
from litestar.datastructures import State
from litestar.exceptions import NotAuthorizedException, NotFoundException

from flowdeck.accounts.credentials import same_secret
from flowdeck.api.auth import PUBLIC
from flowdeck.observability.metrics import CONTENT_TYPE, Metrics

__all__ = ("metrics",)


def _bearer(request: Request[object, object, State]) -> str | None:
    scheme, _, token = request.headers.get("Authorization", "").partition(" ")
    return token.strip() if scheme.lower() == "bearer" else None


@get("/metrics", opt={PUBLIC: True}, include_in_schema=False)  # its own check below, not the users' auth
async def metrics(request: Request[object, object, State], state: State) -> Response[bytes]:
    exporter: Metrics | None = state.metrics
    if exporter is None:
        raise NotFoundException("metrics are turned off on this server (FLOWDECK_METRICS=off)")
    token: str | None = state.metrics_token
    if token is None:
        raise NotFoundException("not served on this port (FLOWDECK_METRICS_ADDR, FLOWDECK_METRICS_TOKEN)")
    sent = _bearer(request)
    if sent is None or not same_secret(sent, token):
        raise NotAuthorizedException(
            "GET /metrics needs Authorization: Bearer <FLOWDECK_METRICS_TOKEN>",
            headers={"WWW-Authenticate": 'Bearer realm="metrics"'},
        )
    return Response(await exporter.render(), media_type=CONTENT_TYPE)
