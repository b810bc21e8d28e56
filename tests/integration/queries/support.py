"""Builders for data-source and saved-query records, node helpers and a real HTTP test server."""

from __future__ import annotations

import dataclasses
import json
import socket
import threading
import time
import types
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, cast
from urllib.parse import parse_qs, urlsplit

from flowdeck.handlers.base import NodeHelpers
from flowdeck.queries.models import DataSource, SavedQuery
from flowdeck.queries.validation import validate_query


def source(kind: str, config: dict[str, Any], *, name: str = "src", source_id: str = "ds-1") -> DataSource:
    return DataSource(source_id, "t-1", name, kind, config, (), 1.0, 1.0)


def query(src: DataSource, parameters: list[str], name: str = "q", **definition: Any) -> SavedQuery:
    canonical = validate_query(name, src.kind, parameters, definition)
    return SavedQuery("q-1", src.tenant_id, name, src.id, src.kind, tuple(parameters), canonical, 1.0, 1.0)


def node_helpers(tenant_id: str, timeout: float = 10.0) -> NodeHelpers:
    values: dict[str, Any] = {
        "instance_id": "run-1", "tenant_id": tenant_id, "workflow_id": "wf-1", "node_id": "q", "iteration": "",
        "attempt": 1, "timeout_seconds": timeout, "is_test": True,
    }  # fmt: skip
    names = {f.name for f in dataclasses.fields(NodeHelpers)}
    if "tenant_id" in names:
        return NodeHelpers(**values)
    return cast(NodeHelpers, types.SimpleNamespace(**values))


def closed_port() -> int:
    """A port on 127.0.0.1 that nothing listens on (bound, then released)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    def log_message(self, *args: Any) -> None:  # quiet
        pass

    def _send(self, status: int, body: bytes, content_type: str = "application/json", **headers: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        for key, value in headers.items():
            self.send_header(key.replace("_", "-"), value)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def _route(self) -> None:
        url = urlsplit(self.path)
        params = {k: v if len(v) > 1 else v[0] for k, v in parse_qs(url.query).items()}
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length).decode() if length else None
        parts = url.path.strip("/").split("/")
        if parts[0] == "status":
            self._send(int(parts[1]), f"status {parts[1]}".encode(), "text/plain")
        elif parts[0] == "slow":
            time.sleep(float(params.get("seconds", 1)))
            self._send(200, b"{}")
        elif parts[0] == "big":
            self._send(200, b"x" * int(params["bytes"]), "text/plain")
        elif parts[0] == "stream":  # no Content-Length: the body ends when the connection closes
            self.send_response(200)
            self.send_header("Content-Type", "text/plain")
            self.end_headers()
            self.wfile.write(b"y" * int(params["bytes"]))
            self.close_connection = True
        elif parts[0] == "redirect":
            self._send(302, b"", "text/plain", Location=params["to"])
        elif parts[0] == "binary":
            self._send(200, bytes(range(256)), "application/octet-stream")
        elif parts[0] == "text":
            self._send(200, "héllo".encode(), "text/plain; charset=utf-8")
        elif parts[0] == "badjson":
            self._send(200, b"{not json", "application/json")
        elif parts[0] == "flaky":  # fails with 503 the first `fail` times per key
            with self.server.lock:
                seen = self.server.hits[params["key"]] = self.server.hits.get(params["key"], 0) + 1
            if seen <= int(params["fail"]):
                self._send(503, b"try later", "text/plain")
            else:
                self._send(200, json.dumps({"attempt": seen}).encode())
        else:
            echo = {"method": self.command, "path": url.path, "rawPath": self.path, "query": params,
                    "headers": {k.lower(): v for k, v in self.headers.items()}, "body": body}  # fmt: skip
            self._send(200, json.dumps(echo).encode(), X_Server="test")

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = do_HEAD = _route  # noqa: N815


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    lock = threading.Lock()
    hits: dict[str, int]


@contextmanager
def http_server() -> Iterator[str]:
    server = _Server(("127.0.0.1", 0), _Handler)
    server.hits = {}
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
