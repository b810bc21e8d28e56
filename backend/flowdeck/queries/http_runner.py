"""The HTTP runner: a saved request against a data source's base URL, with httpx.

The request is ``method baseUrl + path`` with the query's ``query`` parameters, ``headers`` and
``body`` (placeholders resolved from the arguments). Headers merge in this order, later winning: the
data source's ``config.headers``, the query's ``headers``, the data source's secret headers. Path
values are percent-encoded as one segment, so an argument cannot leave the base URL, and the whole URL
is read by ``flowdeck.outbound.parse_url`` (unreadable: a ``ConfigError``, not retried); redirects are not
followed and proxy settings from the environment are ignored. Every connection goes through
``flowdeck.outbound``: the host is resolved once and refused when it is (or resolves to) loopback,
link-local, private ... unless ``FLOWDECK_HTTP_ALLOW`` lists it; that is not retried. The response is read up to
``max_response_bytes`` (decompressed); a JSON content type gives a parsed body, text gives a string,
anything else base64 (then ``bodyEncoding: "base64"``).

Failures: connection errors, timeouts, 5xx, 408 and 429 are retryable; other 4xx, a response over the
size cap and an invalid JSON body are not.
"""

from __future__ import annotations

import asyncio
import base64
import json
from collections.abc import Mapping
from typing import Any, Final
from urllib.parse import quote

import httpx

from flowdeck.domain.errors import NodeError
from flowdeck.outbound import (
    AddressRefusedError,
    OutboundPolicy,
    URLRefusedError,
    guarded_transport,
    join_path,
    parse_url,
)
from flowdeck.queries.models import DataSource, SavedQuery
from flowdeck.queries.placeholders import as_text, render
from flowdeck.queries.values import json_safe

__all__ = ("HttpRunner", "build_request", "source_headers")

_RETRYABLE_STATUS: Final = frozenset({408, 429})
_TEXT_TYPES: Final = ("application/xml", "application/javascript", "application/x-www-form-urlencoded")


def _segment(text: str) -> str:
    encoded = quote(text, safe="")
    return encoded.replace(".", "%2E") if encoded in (".", "..") else encoded


def _is_json(content_type: str) -> bool:
    return content_type == "application/json" or content_type.endswith("+json")


def _body(response: httpx.Response, data: bytes, where: str) -> tuple[Any, str | None]:
    if not data:
        return None, None
    content_type = response.headers.get("content-type", "").split(";")[0].strip().lower()
    charset = response.charset_encoding
    if _is_json(content_type):
        try:
            return json_safe(json.loads(data.decode(charset or "utf-8"))), None
        except (ValueError, LookupError):
            raise NodeError(f"{where}: the response says JSON but is not valid JSON", retryable=False) from None
    if content_type.startswith("text/") or content_type in _TEXT_TYPES or charset:
        try:
            return data.decode(charset or "utf-8", errors="replace"), None
        except LookupError:
            return data.decode("utf-8", errors="replace"), None
    try:
        return data.decode("utf-8"), None
    except UnicodeDecodeError:
        return base64.b64encode(data).decode("ascii"), "base64"


def source_headers(source: DataSource | None, secrets: Mapping[str, str], headers: Mapping[str, Any]) -> dict[str, str]:
    """Request headers, later winning: the data source's ``config.headers``, ``headers``, the source's secrets."""
    merged = dict(source.config.get("headers") or {}) if source is not None else {}
    merged.update({str(key): as_text(value) for key, value in headers.items()})
    merged.update(secrets)
    return merged


def build_request(
    method: str, url: str, query: Mapping[str, Any], headers: dict[str, str], body: Any
) -> dict[str, Any]:
    """httpx request arguments: ``query`` values as text (a list repeats the parameter, ``None`` drops it);
    a string ``body`` is sent as it is, anything else (not ``None``) as JSON."""
    params = {
        str(key): [as_text(v) for v in value] if isinstance(value, list) else as_text(value)
        for key, value in query.items()
        if value is not None
    }
    request: dict[str, Any] = {"method": method, "url": url, "params": params, "headers": headers}
    if isinstance(body, str):
        request["content"] = body.encode()
    elif body is not None:
        request["json"] = body
    return request


class HttpRunner:
    def __init__(
        self,
        *,
        max_response_bytes: int = 10 * 1024 * 1024,
        connect_timeout: float = 10.0,
        policy: OutboundPolicy | None = None,
    ) -> None:
        self.max_response_bytes = max_response_bytes
        self.connect_timeout = connect_timeout
        self.policy = policy or OutboundPolicy()
        self._client: httpx.AsyncClient | None = None

    def _http(self) -> httpx.AsyncClient:
        if self._client is None:
            transport = guarded_transport(self.policy)
            self._client = httpx.AsyncClient(transport=transport, follow_redirects=False, trust_env=False)
        return self._client

    async def close(self) -> None:
        client, self._client = self._client, None
        if client is not None:
            await client.aclose()

    def _request(
        self, source: DataSource, secrets: Mapping[str, str], query: SavedQuery, args: Mapping[str, Any]
    ) -> dict[str, Any]:
        spec = query.definition
        path = str(render(spec.get("path") or "", args, _segment))
        url = join_path(str(source.config["baseUrl"]), path)
        return build_request(
            spec.get("method", "GET"), url, render(spec.get("query") or {}, args),
            source_headers(source, secrets, render(spec.get("headers") or {}, args)), render(spec.get("body"), args),
        )  # fmt: skip

    async def run(
        self,
        source: DataSource,
        secrets: Mapping[str, str],
        query: SavedQuery,
        args: Mapping[str, Any],
        *,
        timeout: float,
    ) -> dict[str, Any]:
        request = self._request(source, secrets, query, args)
        configured = source.config.get("timeoutSeconds")
        if isinstance(configured, int | float) and not isinstance(configured, bool):
            timeout = min(timeout, float(configured))
        where = f"saved query {query.name!r} ({request['method']} {query.definition.get('path') or '/'})"
        data, response = await self._send(f"data source {source.name!r}", request, where, timeout)
        return self._result(response, data, where)

    async def send(
        self, target: str, request: dict[str, Any], where: str, timeout: float
    ) -> tuple[bytes, httpx.Response]:
        """Send ``request`` (``build_request``) through the outbound guard and read the answer up to the size cap,
        whatever its status; every failure is a ``NodeError`` (``target`` names what was called, ``where`` the
        request)."""
        return await self._send(target, request, where, timeout)

    async def _send(
        self, target: str, request: dict[str, Any], where: str, timeout: float
    ) -> tuple[bytes, httpx.Response]:
        limits = httpx.Timeout(timeout, connect=min(timeout, self.connect_timeout))
        try:  # a source saved before a rule existed, or arguments that make the path unreadable
            request = {**request, "url": parse_url(request["url"])}
        except URLRefusedError as exc:
            message = f"{where}: the URL (config.baseUrl with the path) {exc}"
            raise NodeError(message, retryable=False, error_type="ConfigError") from None
        try:
            async with asyncio.timeout(timeout), self._http().stream(**request, timeout=limits) as response:
                return await self._read(response, where), response
        except AddressRefusedError as exc:
            raise NodeError(f"{target}: {exc}", retryable=False, error_type="AddressRefused") from None
        except (httpx.TimeoutException, TimeoutError):
            raise NodeError(f"{where}: timed out after {timeout:g} s", error_type="QueryTimeout") from None
        except (httpx.UnsupportedProtocol, httpx.InvalidURL) as exc:
            raise NodeError(f"{where}: bad URL: {exc}", retryable=False, error_type="ConfigError") from None
        except httpx.LocalProtocolError as exc:
            raise NodeError(f"{where}: invalid request: {exc}", retryable=False, error_type="ArgumentError") from None
        except httpx.TransportError as exc:
            message = f"cannot reach {target}: {str(exc) or type(exc).__name__}"
            raise NodeError(message, error_type="ConnectionError") from None

    async def probe(self, source: DataSource, secrets: Mapping[str, str], *, timeout: float) -> tuple[int, str]:
        """``GET`` the base URL (with the source's headers and secrets): the status and its reason phrase."""
        headers = {**dict(source.config.get("headers") or {}), **secrets}
        request = {"method": "GET", "url": str(source.config["baseUrl"]), "headers": headers}
        where = f"connection test of data source {source.name!r} (GET {source.config['baseUrl']})"
        _, response = await self._send(f"data source {source.name!r}", request, where, timeout)
        return response.status_code, response.reason_phrase

    async def _read(self, response: httpx.Response, where: str) -> bytes:
        declared = response.headers.get("content-length", "")
        too_large = NodeError(
            f"{where}: the response is larger than {self.max_response_bytes} bytes",
            retryable=False,
            error_type="ResponseTooLarge",
        )
        if declared.isdigit() and int(declared) > self.max_response_bytes:
            raise too_large
        chunks, size = [], 0
        async for chunk in response.aiter_bytes():
            size += len(chunk)
            if size > self.max_response_bytes:
                raise too_large
            chunks.append(chunk)
        return b"".join(chunks)

    @classmethod
    def _result(cls, response: httpx.Response, data: bytes, where: str) -> dict[str, Any]:
        if response.status_code >= 400:
            raise cls.status_error(response, data, where)
        return cls.answer(response, data, where)

    @staticmethod
    def status_error(response: httpx.Response, data: bytes, where: str) -> NodeError:
        """The failure an unwanted status is: retryable for 5xx, 408 and 429, not for the others."""
        status = response.status_code
        snippet = data[:300].decode("utf-8", errors="replace").strip()
        message = f"{where}: HTTP {status} {response.reason_phrase}".rstrip() + (f": {snippet}" if snippet else "")
        retryable = status >= 500 or status in _RETRYABLE_STATUS
        return NodeError(message, retryable=retryable, error_type="HTTPError", details={"status": status})

    @staticmethod
    def answer(response: httpx.Response, data: bytes, where: str) -> dict[str, Any]:
        """``{status, headers, body}``: the body parsed when JSON, else text (binary: ``bodyEncoding: "base64"``)."""
        status = response.status_code
        body, encoding = _body(response, data, where)
        headers = {key: ", ".join(response.headers.get_list(key)) for key in response.headers}
        result: dict[str, Any] = {"status": status, "headers": headers, "body": body}
        if encoding is not None:
            result["bodyEncoding"] = encoding
        return result
