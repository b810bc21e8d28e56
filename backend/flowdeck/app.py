"""The ASGI application: Litestar (REST, editor) with the Socket.IO server beside it, and the engine in the lifespan.

``socketio.ASGIApp`` sends ``/socket.io/`` to Socket.IO and everything else, lifespan included, to
Litestar (it passes the lifespan through only because no on_startup/on_shutdown is given to it).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass
from typing import Any

import socketio  # type: ignore[import-untyped]
from litestar import Litestar
from uvicorn.middleware.proxy_headers import ProxyHeadersMiddleware

from flowdeck.api.application import announce_ready, create_api
from flowdeck.api.config import ApiConfig, RuntimeFactory, RuntimeLike
from flowdeck.api.context import AppContext, Services
from flowdeck.api.live import ServicesBackend
from flowdeck.observability.listener import open_metrics_listener
from flowdeck.observability.metrics import Metrics, observe_engine
from flowdeck.realtime.server import RealtimeServer
from flowdeck.runtime import Runtime, freeze_startup_heap, open_runtime
from flowdeck.settings import Settings

__all__ = ("Flowdeck", "build_app", "create_app")


@dataclass(frozen=True, slots=True)
class Flowdeck:
    asgi: Any
    """What uvicorn serves (run it with ``proxy_headers=False``: the app reads proxy headers itself)."""
    api: Litestar
    realtime: RealtimeServer
    context: AppContext
    """The running services (tests reach the engine and accounts through it)."""


def _default_runtime(config: ApiConfig) -> RuntimeFactory:
    def factory(settings: Settings) -> AbstractAsyncContextManager[RuntimeLike]:
        return open_runtime(
            settings, with_worker=config.with_worker, migrate=settings.is_sqlite, transport=config.fanout_transport
        )

    return factory


def build_app(settings: Settings, config: ApiConfig | None = None) -> Flowdeck:
    config = config or ApiConfig()
    open_services = config.runtime_factory or _default_runtime(config)
    context = AppContext()
    realtime = RealtimeServer(ServicesBackend(context), live_check_seconds=config.live_check_seconds)
    metrics = Metrics() if settings.metrics else None
    if metrics is not None:
        metrics.sources.connections = realtime.connection_count

    @asynccontextmanager
    async def lifespan(_: Litestar) -> AsyncIterator[None]:
        async with open_services(settings) as runtime:
            services = Services.build(runtime, config)
            context.open(services)
            if metrics is not None:
                own = runtime if isinstance(runtime, Runtime) else None
                sandbox = own.sandbox if own is not None else None
                traffic = own.fanout.traffic if own is not None and own.fanout is not None else None
                observe_engine(metrics, runtime.engine, sandbox=sandbox, fanout=traffic)
            await realtime.start(runtime.engine.publisher)
            freeze_startup_heap()
            listener = None
            try:
                if metrics is not None and settings.metrics_addr is not None:
                    listener = await open_metrics_listener(metrics, settings.metrics_addr)
                await announce_ready(services, config)
                yield
            finally:
                await realtime.stop()
                if listener is not None:
                    await listener.close()
                context.close()

    api = create_api(config, context, lifespan, metrics, settings.metrics_token)
    asgi: Any = socketio.ASGIApp(realtime.sio, other_asgi_app=api, socketio_path="socket.io")
    if settings.trusted_proxies:
        # The client address (login limits) and scheme (Secure cookies) from X-Forwarded-For/-Proto, but only
        # when the peer is a listed proxy; anyone else's headers are ignored (docs/api.md "Client address").
        asgi = ProxyHeadersMiddleware(asgi, trusted_hosts=list(settings.trusted_proxies))
    return Flowdeck(asgi, api, realtime, context)


def create_app(settings: Settings, *, with_worker: bool = True) -> Any:
    return build_app(settings, ApiConfig(with_worker=with_worker)).asgi
