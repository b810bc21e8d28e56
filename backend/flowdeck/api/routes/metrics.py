"""``GET /metrics``: Prometheus text format (``FLOWDECK_METRICS=off``: 404)."""

from __future__ import annotations

from litestar import Response, get
from litestar.datastructures import State
from litestar.exceptions import NotFoundException

from flowdeck.api.auth import PUBLIC
from flowdeck.observability.metrics import CONTENT_TYPE, Metrics

__all__ = ("metrics",)


@get("/metrics", opt={PUBLIC: True}, include_in_schema=False)
async def metrics(state: State) -> Response[bytes]:
    exporter: Metrics | None = state.metrics
    if exporter is None:
        raise NotFoundException("metrics are turned off on this server (FLOWDECK_METRICS=off)")
    return Response(await exporter.render(), media_type=CONTENT_TYPE)
