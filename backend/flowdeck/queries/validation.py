"""What may be saved: data-source configs and secrets, saved queries and their declared parameters.

Every check returns all problems at once (``QueryValidationError.problems``), each naming the field.
SQL parameters are found the way SQLAlchemy's ``text()`` binds them (``:name``; ``\\:`` is a literal
colon), so what is validated here is exactly what is bound when the query runs.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Final

import sqlalchemy as sa
from sqlalchemy.engine import URL, make_url
from sqlalchemy.exc import ArgumentError, NoSuchModuleError

from flowdeck.domain.errors import ConfigIssue
from flowdeck.outbound.urls import URLRefusedError, join_path, parse_url
from flowdeck.queries.errors import QueryValidationError
from flowdeck.queries.models import KINDS, SQL
from flowdeck.queries.placeholders import IDENTIFIER, placeholders

__all__ = (
    "HTTP_METHODS",
    "MAX_SQL_CHARS",
    "async_sql_url",
    "is_read_only",
    "points_elsewhere",
    "sql_parameters",
    "validate_query",
    "validate_source",
)

HTTP_METHODS: Final = ("GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS")
MAX_SQL_CHARS: Final = 100_000
MAX_PARAMETERS: Final = 100
_HEADER_NAME: Final = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
_CAST_AFTER_BIND: Final = re.compile(r"(?<![:\w\\]):([A-Za-z_]\w*)::")
# Drivers that cannot run under asyncio, mapped to the async driver of the same database.
_ASYNC_DRIVERS: Final = {
    "sqlite": "sqlite+aiosqlite",
    "sqlite+pysqlite": "sqlite+aiosqlite",
    "postgres": "postgresql+asyncpg",
    "postgresql": "postgresql+asyncpg",
    "postgresql+psycopg2": "postgresql+asyncpg",
}
_SQL_CONFIG_KEYS: Final = frozenset({"url", "readOnly"})
_TARGET_KEYS: Final = ("url", "baseUrl")  # where a source points: changing one drops its secrets
_HTTP_CONFIG_KEYS: Final = frozenset({"baseUrl", "headers", "timeoutSeconds"})


def async_sql_url(raw: str, password: str | None = None) -> URL:
    """The URL to open, with an async driver and the secret password; ``ValueError`` says what is wrong."""
    try:
        url = make_url(raw)
    except ArgumentError:
        raise ValueError("url is not a database URL (e.g. postgresql+asyncpg://user@host/db)") from None
    url = url.set(drivername=_ASYNC_DRIVERS.get(url.drivername, url.drivername))
    try:
        dialect = url.get_dialect()
    except NoSuchModuleError:
        raise ValueError(f"unknown database type {url.drivername!r}") from None
    if not getattr(dialect, "is_async", False):
        raise ValueError(f"{url.drivername!r} is not an async driver (use e.g. postgresql+asyncpg or sqlite+aiosqlite)")
    return url if password is None else url.set(password=password)


def is_read_only(config: Mapping[str, Any]) -> bool:
    """Queries are read-only unless the source opts into writes with ``readOnly: false``."""
    return config.get("readOnly") is not False


def points_elsewhere(old: Mapping[str, Any], new: Mapping[str, Any]) -> str | None:
    """The config key whose change moves the source to another place (host, port, database, URL), if any.

    Any change of ``url`` / ``baseUrl`` counts (a username or path too): stored secrets are only ever
    sent where the user who typed them pointed the source.
    """
    return next((f"config.{key}" for key in _TARGET_KEYS if old.get(key) != new.get(key)), None)


def sql_parameters(sql: str) -> set[str]:
    """The ``:name`` bind parameters of ``sql``, as ``sqlalchemy.text`` finds them."""
    return set(sa.text(sql)._bindparams)


def _name_issues(name: Any) -> list[ConfigIssue]:
    if not isinstance(name, str) or not name.strip():
        return [ConfigIssue("name", "name must be a non-empty string")]
    if len(name) > 200:
        return [ConfigIssue("name", "name must be at most 200 characters")]
    return []


def _header_issues(headers: Any, path: str, *, templated: bool = False) -> list[ConfigIssue]:
    if headers is None:
        return []
    if not isinstance(headers, dict):
        return [ConfigIssue(path, "must be an object of header names to strings")]
    issues = []
    for key, value in headers.items():
        if not _HEADER_NAME.fullmatch(str(key)):
            issues.append(ConfigIssue(f"{path}.{key}", "is not a valid header name"))
        elif not isinstance(value, str) or "\r" in value or "\n" in value:
            kind = "a string" + (" (placeholders allowed)" if templated else "")
            issues.append(ConfigIssue(f"{path}.{key}", f"must be {kind} without line breaks"))
    return issues


def _sql_source_issues(config: Mapping[str, Any], secrets: Mapping[str, Any]) -> list[ConfigIssue]:
    issues = [ConfigIssue("secrets." + k, "an sql data source takes only a 'password' secret")
              for k in secrets if k != "password"]  # fmt: skip
    url = config.get("url")
    if not isinstance(url, str) or not url:
        return [*issues, ConfigIssue("config.url", "url must be a SQLAlchemy database URL")]
    try:
        parsed = async_sql_url(url)
    except ValueError as exc:
        return [*issues, ConfigIssue("config.url", str(exc))]
    if "readOnly" in config and not isinstance(config["readOnly"], bool):
        issues.append(ConfigIssue("config.readOnly", "readOnly must be true or false (default true)"))
    if parsed.password is not None:
        issues.append(
            ConfigIssue("config.url", "put the password in secrets.password, not in the URL (config is shown)")
        )
    return issues


def _http_source_issues(config: Mapping[str, Any], secrets: Mapping[str, Any]) -> list[ConfigIssue]:
    issues = _header_issues(dict(secrets), "secrets")
    try:
        if parse_url(config.get("baseUrl")).query:
            issues.append(ConfigIssue("config.baseUrl", "baseUrl takes no query (saved queries add one)"))
    except URLRefusedError as exc:
        issues.append(ConfigIssue("config.baseUrl", f"baseUrl {exc}"))
    issues += _header_issues(config.get("headers"), "config.headers")
    timeout = config.get("timeoutSeconds")
    if timeout is not None and (
        isinstance(timeout, bool) or not isinstance(timeout, int | float) or not 0 < timeout <= 300
    ):
        issues.append(ConfigIssue("config.timeoutSeconds", "timeoutSeconds must be a number in (0, 300]"))
    return issues


def validate_source(name: Any, kind: Any, config: Any, secrets: Any) -> None:
    """Raise ``QueryValidationError`` unless this is a valid data source (secrets: the final set)."""
    issues = _name_issues(name)
    if kind not in KINDS:
        issues.append(ConfigIssue("kind", "kind must be 'sql' or 'http'"))
    if not isinstance(config, dict):
        issues.append(ConfigIssue("config", "config must be an object"))
    if not isinstance(secrets, dict) or not all(isinstance(v, str) for v in secrets.values()):
        issues.append(ConfigIssue("secrets", "secrets must be an object of names to strings"))
    if not issues:
        allowed = _SQL_CONFIG_KEYS if kind == SQL else _HTTP_CONFIG_KEYS
        issues += [ConfigIssue(f"config.{k}", f"unknown setting (allowed: {', '.join(sorted(allowed))})")
                   for k in config if k not in allowed]  # fmt: skip
        check = _sql_source_issues if kind == SQL else _http_source_issues
        issues += check(config, secrets)
    if issues:
        raise QueryValidationError(issues)


def _parameter_issues(parameters: Any) -> list[ConfigIssue]:
    if not isinstance(parameters, list):
        return [ConfigIssue("parameters", "parameters must be a list of names")]
    issues, seen = [], set()
    for i, name in enumerate(parameters):
        if not isinstance(name, str) or not IDENTIFIER.fullmatch(name):
            issues.append(ConfigIssue(f"parameters[{i}]", "a parameter name is a letter or _ then letters, digits, _"))
        elif name in seen:
            issues.append(ConfigIssue(f"parameters[{i}]", f"parameter {name!r} is declared twice"))
        seen.add(name)
    if len(parameters) > MAX_PARAMETERS:
        issues.append(ConfigIssue("parameters", f"at most {MAX_PARAMETERS} parameters"))
    return issues


def _usage_issues(declared: list[str], used: set[str], where: str, mark: str) -> list[ConfigIssue]:
    issues = [
        ConfigIssue(where, f"the {where} uses {mark.format(name)}, but {name!r} is not declared in parameters")
        for name in sorted(used - set(declared))
    ]
    issues += [
        ConfigIssue("parameters", f"parameter {name!r} is declared but the {where} never uses {mark.format(name)}")
        for name in declared
        if name not in used
    ]
    return issues


def _sql_query_issues(definition: Mapping[str, Any], declared: list[str]) -> list[ConfigIssue]:
    sql = definition.get("sql")
    if not isinstance(sql, str) or not sql.strip():
        return [ConfigIssue("sql", "sql must be a non-empty string")]
    if len(sql) > MAX_SQL_CHARS:
        return [ConfigIssue("sql", f"sql must be at most {MAX_SQL_CHARS} characters")]
    issues = [
        ConfigIssue("sql", f":{m.group(1)}::type is read as a cast, not a parameter: write CAST(:{m.group(1)} AS type)")
        for m in _CAST_AFTER_BIND.finditer(sql)
    ]
    issues += _usage_issues(declared, sql_parameters(sql), "sql", ":{}")
    if any("not declared" in issue.message for issue in issues):
        issues.append(ConfigIssue("sql", "a colon that is not a parameter is written \\: (e.g. '10\\:30')"))
    return issues


def _http_path_issues(path: Any) -> list[ConfigIssue]:
    if not isinstance(path, str):
        return [ConfigIssue("path", "path must be a string")]
    static = re.sub(r"\{\{.*?\}\}", "x", path)
    if "://" in static or static.startswith("//") or "?" in static or "#" in static:
        return [ConfigIssue("path", "path is relative to the data source's baseUrl; put parameters in 'query'")]
    if any(segment in (".", "..") for segment in static.split("/")):
        return [ConfigIssue("path", "path must not contain '.' or '..' segments")]
    try:
        parse_url(join_path("http://base.example", static))  # how it is read on the data source's baseUrl
    except URLRefusedError as exc:
        return [ConfigIssue("path", f"path (on the baseUrl) {exc}")]
    return []


def _http_query_issues(definition: Mapping[str, Any], declared: list[str]) -> list[ConfigIssue]:
    issues = []
    if str(definition.get("method", "GET")).upper() not in HTTP_METHODS:
        issues.append(ConfigIssue("method", f"method must be one of {', '.join(HTTP_METHODS)}"))
    issues += _http_path_issues(definition.get("path", ""))
    query = definition.get("query")
    if query is not None and (not isinstance(query, dict) or any(isinstance(v, dict) for v in query.values())):
        issues.append(ConfigIssue("query", "query must be an object of names to values or lists of values"))
    issues += _header_issues(definition.get("headers"), "headers", templated=True)
    used: set[str] = set()
    templated = {k: definition.get(k) for k in ("path", "query", "headers", "body")}
    for where, inner, valid in placeholders(templated):
        if valid:
            used.add(inner)
        else:
            issues.append(
                ConfigIssue(where, f"{{{{ {inner} }}}}: only {{{{ name }}}} of a declared parameter is allowed")
            )
    return issues + _usage_issues(declared, used, "request", "{{{{ {} }}}}")


def validate_query(name: Any, kind: str, parameters: Any, definition: Mapping[str, Any]) -> dict[str, Any]:
    """The canonical definition of a valid saved query, else ``QueryValidationError`` with every problem."""
    issues = _name_issues(name) + _parameter_issues(parameters)
    declared = [p for p in parameters if isinstance(p, str)] if isinstance(parameters, list) else []
    issues += _sql_query_issues(definition, declared) if kind == SQL else _http_query_issues(definition, declared)
    if issues:
        raise QueryValidationError(issues)
    if kind == SQL:
        return {"sql": definition["sql"]}
    return {
        "method": str(definition.get("method", "GET")).upper(),
        "path": definition.get("path") or "",
        "query": dict(definition.get("query") or {}),
        "body": definition.get("body"),
        "headers": dict(definition.get("headers") or {}),
    }
