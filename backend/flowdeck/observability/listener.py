"""FLOWDECK_METRICS_ADDR: ``/metrics`` on a listener of its own, away from the app's port (serve and worker).

A few lines of HTTP/1.1 over asyncio rather than a second web server: it answers ``GET`` and ``HEAD
/metrics``, 404 to any other path and 405 to other methods, one request per connection
(``Connection: close``). It runs in the process's event loop, so a scrape awaits the cached gauges
(``Metrics.render``) like a scrape on the app's port. Whoever reaches the address may read: bind it to
loopback or a network only the scraper reaches.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging

from flowdeck.observability.metrics import CONTENT_TYPE, Metrics

__all__ = ("MetricsListener", "listener_url", "open_metrics_listener")

log = logging.getLogger(__name__)

_MAX_HEAD = 8192
"""Bytes of request line and headers read at most (a scraper sends a few hundred)."""
_READ_SECONDS = 10.0
"""How long a connection may take to send its request."""


def listener_url(host: str, port: int) -> str:
    return f"http://[{host}]:{port}/metrics" if ":" in host else f"http://{host}:{port}/metrics"


class MetricsListener:
    def __init__(self, metrics: Metrics, host: str, port: int) -> None:
        self.metrics = metrics
        self.host = host
        self.port = port
        self._server: asyncio.Server | None = None

    @property
    def url(self) -> str:
        return listener_url(self.host, self.port)

    async def start(self) -> None:
        try:
            self._server = await asyncio.start_server(self._answer, self.host, self.port, limit=_MAX_HEAD)
        except OSError as exc:
            raise OSError(exc.errno, f"FLOWDECK_METRICS_ADDR {self.host}:{self.port}: {exc.strerror}") from exc

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()
            self._server = None

    async def _answer(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), _READ_SECONDS)
            status, headers, body = await self._response(head.split(b"\r\n", 1)[0].decode("latin-1"))
            lines = [f"HTTP/1.1 {status}", *headers, f"Content-Length: {len(body)}", "Connection: close", "", ""]
            writer.write("\r\n".join(lines).encode("latin-1"))
            if not head.startswith(b"HEAD "):
                writer.write(body)
            await writer.drain()
        except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, TimeoutError, ConnectionError):
            pass  # a client that hung up, sent too much or too little: nothing to answer
        except Exception:
            log.warning("the metrics listener could not answer a request", exc_info=True)
        finally:
            writer.close()
            with contextlib.suppress(ConnectionError):
                await writer.wait_closed()

    async def _response(self, request_line: str) -> tuple[str, list[str], bytes]:
        method, _, rest = request_line.partition(" ")
        path = rest.partition(" ")[0].partition("?")[0]
        if path != "/metrics":
            return "404 Not Found", ["Content-Type: text/plain"], b"only /metrics is served here\n"
        if method not in ("GET", "HEAD"):
            return "405 Method Not Allowed", ["Allow: GET, HEAD", "Content-Type: text/plain"], b""
        return "200 OK", [f"Content-Type: {CONTENT_TYPE}"], await self.metrics.render()


async def open_metrics_listener(metrics: Metrics, addr: tuple[str, int]) -> MetricsListener:
    """A started listener on ``addr`` (``Settings.metrics_addr``); close it with ``close()``."""
    listener = MetricsListener(metrics, *addr)
    await listener.start()
    return listener
