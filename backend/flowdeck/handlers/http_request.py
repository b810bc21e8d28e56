"""The ``http`` node (SPEC §2): one HTTP request on the run's behalf, through the outbound guard.

Config: ``method`` (default ``GET``), ``url``, ``query`` and ``headers`` (objects), ``body`` (any JSON, or a
string sent as it is), all templates resolved before ``execute``; ``dataSourceId`` (a stored HTTP data source
of the run's tenant: ``url`` is then a path on its base URL and its headers and secrets are sent, as for its
saved queries), ``timeoutSeconds`` (the request's limit, within the node's own ``timeoutSeconds``) and
``failOnStatus`` (default true: an answer outside 2xx fails the node, so it takes ``error`` per its
``errorHandling``). Output ``{status, headers, body}``, the body parsed when the answer is JSON.

The request is sent by the query engine's ``HttpRunner``, so everything a saved HTTP query meets applies:
``flowdeck.outbound.parse_url`` reads the URL, ``FLOWDECK_HTTP_ALLOW`` and the address rules decide where it
may go (a literal URL that is refused is a validation error naming ``config.url``; a templated one fails the
node), redirects are not followed and the answer is read up to the same size cap. Connection failures,
timeouts, 5xx, 408 and 429 are retried by the node's retry policy; other statuses and refusals are not.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar, Final

from flowdeck.domain.errors import ConfigIssue, NodeError
from flowdeck.handlers.base import HandlerResult, NodeHandler, NodeHelpers
from flowdeck.outbound import URLRefusedError, join_path, parse_url
from flowdeck.queries.engine import QueryEngine
from flowdeck.queries.http_runner import build_request, source_headers
from flowdeck.queries.models import HTTP, DataSource
from flowdeck.queries.service import load_source
from flowdeck.queries.store import DataSourceStore
from flowdeck.validation.limits import MAX_NODE_TIMEOUT_SECONDS

__all__ = ("METHODS", "HttpRequestHandler")

METHODS: Final = ("GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS")
_KEYS: Final = ("method", "url", "query", "headers", "body", "dataSourceId", "timeoutSeconds", "failOnStatus")
_TIMEOUT_SHARE: Final = 0.9


def _is_template(value: Any) -> bool:
    return isinstance(value, str) and "{{" in value


def _is_absolute(url: str) -> bool:
    return "://" in url.split("?", 1)[0]


def _config_error(message: str) -> NodeError:
    return NodeError(message, retryable=False, error_type="ConfigError")


class HttpRequestHandler(NodeHandler):
    type_name: ClassVar[str] = "http"
    handles: ClassVar[tuple[str, ...]] = ("success", "error")
    template_fields: ClassVar[tuple[str, ...]] = ("method", "url", "query", "headers", "body")

    def __init__(self, store: DataSourceStore, engine: QueryEngine) -> None:
        self._store = store
        self._engine = engine

    # ------------------------------------------------------------------------------------ validation

    def config_issues(self, config: Mapping[str, Any]) -> list[ConfigIssue]:
        issues = [ConfigIssue(f"config.{key}", f"unknown field; known: {', '.join(_KEYS)}") for key in config
                  if key not in _KEYS]  # fmt: skip
        method = config.get("method", "GET")
        if not isinstance(method, str) or (not _is_template(method) and method.upper() not in METHODS):
            issues.append(ConfigIssue("config.method", f"method must be one of {', '.join(METHODS)} (or a template)"))
        issues += self._url_issues(config.get("url"), config.get("dataSourceId"))
        for key in ("query", "headers"):
            value = config.get(key, {})
            if not isinstance(value, dict):
                issues.append(ConfigIssue(f"config.{key}", f"{key} must be an object of names to values or templates"))
            elif key == "headers":
                issues += [ConfigIssue(f"config.headers.{name}", "a header value is a string (or a template)")
                           for name, v in value.items() if not isinstance(v, str | int | float)]  # fmt: skip
        timeout, most = config.get("timeoutSeconds"), MAX_NODE_TIMEOUT_SECONDS
        if timeout is not None and (
            isinstance(timeout, bool) or not isinstance(timeout, int | float) or not 0 < timeout <= most
        ):
            issues.append(ConfigIssue("config.timeoutSeconds", f"a number above 0 and at most {most}"))
        if not isinstance(config.get("failOnStatus", True), bool):
            issues.append(ConfigIssue("config.failOnStatus", "failOnStatus must be true or false"))
        return issues

    def _url_issues(self, url: Any, source_id: Any) -> list[ConfigIssue]:
        issues = []
        if source_id is not None and (not isinstance(source_id, str) or not 0 < len(source_id.strip()) <= 128):
            issues.append(ConfigIssue("config.dataSourceId", "dataSourceId must be the id of an HTTP data source"))
        if not isinstance(url, str) or not url.strip():
            return [*issues, ConfigIssue("config.url", "url is required: an http:// or https:// URL, or a template")]
        if _is_template(url):
            return issues  # checked when it is resolved, at run time
        if source_id:
            if _is_absolute(url):
                issues.append(ConfigIssue("config.url", "with a dataSourceId, url is a path on its base URL (/orders)"))
            return issues
        try:
            parse_url(url, self._engine.outbound)
        except URLRefusedError as exc:
            issues.append(ConfigIssue("config.url", f"the URL {exc}"))
        return issues

    async def tenant_issues(self, tenant_id: str, config: Mapping[str, Any]) -> list[ConfigIssue]:
        source_id = config.get("dataSourceId")
        if not isinstance(source_id, str) or not source_id.strip() or _is_template(source_id):
            return []
        source = await self._store.get_source(tenant_id, source_id.strip())
        if source is None:  # another tenant's source reads the same: its existence is not revealed
            return [ConfigIssue("config.dataSourceId", f"no data source {source_id!r} here")]
        if source.kind != HTTP:
            return [ConfigIssue("config.dataSourceId", f"data source {source.name!r} is a {source.kind} source")]
        return []

    # ------------------------------------------------------------------------------------- running

    async def execute(
        self, config: Mapping[str, Any], context: Mapping[str, Any], helpers: NodeHelpers
    ) -> HandlerResult:
        method = config.get("method") or "GET"
        if not isinstance(method, str) or method.upper() not in METHODS:
            raise _config_error(f"config.method is {method!r}; expected one of {', '.join(METHODS)}")
        method = method.upper()
        url = config.get("url")
        if not isinstance(url, str) or not url.strip():
            raise _config_error(f"config.url resolved to {url!r}; expected an http:// or https:// URL")
        url = url.strip()
        source: DataSource | None = None
        secrets: dict[str, str] = {}
        source_id = config.get("dataSourceId")
        if source_id:
            source, secrets = await self._source(helpers.tenant_id, str(source_id), url)
            url = join_path(str(source.config["baseUrl"]), url)
        self._check_url(url)
        query, headers = config.get("query") or {}, config.get("headers") or {}
        if not isinstance(query, Mapping) or not isinstance(headers, Mapping):
            raise _config_error("config.query and config.headers must resolve to objects")
        request = build_request(method, url, query, source_headers(source, secrets, headers), config.get("body"))
        where = f"{method} {url}"
        target = f"data source {source.name!r}" if source is not None else url
        data, response = await self._engine.http.send(target, request, where, self._timeout(config, helpers, source))
        if config.get("failOnStatus", True) is not False and not 200 <= response.status_code < 300:
            raise self._engine.http.status_error(response, data, where)
        return HandlerResult(output=self._engine.http.answer(response, data, where), next_handle="success")

    async def _source(self, tenant_id: str, source_id: str, url: str) -> tuple[DataSource, dict[str, str]]:
        source, secrets = await load_source(self._store, tenant_id, source_id)
        if source.kind != HTTP:
            message = f"data source {source.name!r} is a {source.kind} source; an http node needs an http one"
            raise _config_error(message)
        if _is_absolute(url):
            raise _config_error(f"config.url is {url!r}: with a dataSourceId it is a path on the source's base URL")
        return source, secrets

    def _check_url(self, url: str) -> None:
        try:
            parse_url(url)
        except URLRefusedError as exc:
            raise _config_error(f"config.url: the URL {url!r} {exc}") from None
        try:
            parse_url(url, self._engine.outbound)
        except URLRefusedError as exc:
            message = f"config.url: the URL {url!r} {exc}"
            raise NodeError(message, retryable=False, error_type="AddressRefused") from None

    @staticmethod
    def _timeout(config: Mapping[str, Any], helpers: NodeHelpers, source: DataSource | None) -> float:
        seconds = helpers.timeout_seconds * _TIMEOUT_SHARE
        for limit in (config.get("timeoutSeconds"), source.config.get("timeoutSeconds") if source else None):
            if isinstance(limit, int | float) and not isinstance(limit, bool) and limit > 0:
                seconds = min(seconds, float(limit))
        return seconds
