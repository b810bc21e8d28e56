"""The data-source and saved-query API the REST layer calls (SPEC §5, §6), and ``run_saved_query``.

Bodies and answers are JSON objects with camelCase keys. A data source answers
``{id, name, kind, config, secrets: {name: "set"}, createdAt, updatedAt}``: secret values never leave.
On update, a secret whose value is ``"set"`` (the mask, sent back by a form) is left as it is and
``null`` removes it. A saved query answers ``{id, name, dataSourceId, kind, parameters, sql}`` or, for
HTTP, ``{..., method, path, query, body, headers}``. Lists are ``{items, nextCursor}`` by name.

Saving also checks where a source points (``QueryEngine.check_source``: SQLite directories, refused
addresses); an update that changes ``config.url`` / ``config.baseUrl`` must send the secrets again.
``test_data_source`` / ``test_saved_data_source`` try a connection through the very path a query
takes and answer ``{ok, message, latencyMs}``.

Errors: ``NotFoundError`` (404), ``QueryValidationError`` (422, ``problems``), ``NameTakenError`` and
``DataSourceInUseError`` (409); ``preview`` raises the query's ``NodeError`` (``retryable`` says 502/504
rather than 400).
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Mapping
from typing import Any, Final

from flowdeck.domain.errors import ConfigIssue, NodeError
from flowdeck.queries.engine import QueryEngine
from flowdeck.queries.errors import NotFoundError, QueryValidationError
from flowdeck.queries.models import DataSource, SavedQuery
from flowdeck.queries.secrets import SecretDecryptionError, SecretKeyMissingError
from flowdeck.queries.store import DataSourceStore
from flowdeck.queries.validation import validate_source

__all__ = (
    "SECRET_MASK",
    "DataService",
    "load_source",
    "query_view",
    "run_saved_query",
    "secrets_for_run",
    "source_view",
)

SECRET_MASK: Final = "set"  # noqa: S105  (what is shown instead of a secret value)
_READ_ONLY: Final = frozenset({"id", "createdAt", "updatedAt"})
_SOURCE_KEYS: Final = frozenset({"name", "kind", "config", "secrets"})
_DEFINITION_KEYS: Final = ("sql", "method", "path", "query", "body", "headers")
_QUERY_KEYS: Final = frozenset({"name", "kind", "dataSourceId", "parameters", *_DEFINITION_KEYS})


def source_view(source: DataSource) -> dict[str, Any]:
    return {
        "id": source.id, "name": source.name, "kind": source.kind, "config": source.config,
        "secrets": dict.fromkeys(source.secret_names, SECRET_MASK),
        "createdAt": source.created_at, "updatedAt": source.updated_at,
    }  # fmt: skip


def query_view(query: SavedQuery) -> dict[str, Any]:
    return {
        "id": query.id, "name": query.name, "dataSourceId": query.data_source_id, "kind": query.kind,
        "parameters": list(query.parameters), **query.definition,
        "createdAt": query.created_at, "updatedAt": query.updated_at,
    }  # fmt: skip


def _body(body: Any, allowed: frozenset[str]) -> dict[str, Any]:
    if not isinstance(body, Mapping):
        raise QueryValidationError([ConfigIssue("", "the body must be a JSON object")])
    unknown = [ConfigIssue(str(k), "unknown field") for k in body if k not in allowed and k not in _READ_ONLY]
    if unknown:
        raise QueryValidationError(unknown)
    return {k: v for k, v in body.items() if k in allowed}


def _cursor(items: list[Any], limit: int) -> str | None:
    if len(items) <= limit:
        return None
    last = items[limit - 1]
    return base64.urlsafe_b64encode(json.dumps([last.name, last.id]).encode()).decode()


def _after(cursor: str | None) -> tuple[str, str] | None:
    if not cursor:
        return None
    try:
        name, last_id = json.loads(base64.urlsafe_b64decode(cursor.encode()))
    except (ValueError, TypeError, binascii.Error):
        raise QueryValidationError([ConfigIssue("cursor", "cursor is not one this API returned")]) from None
    return str(name), str(last_id)


def _limit(limit: int) -> int:
    return max(1, min(int(limit), 200))


async def _run(
    store: DataSourceStore,
    engine: QueryEngine,
    query: SavedQuery,
    args: Any,
    timeout: float | None,
    row_limit: int | None,
) -> dict[str, Any]:
    source = await store.get_source(query.tenant_id, query.data_source_id)
    if source is None:
        raise NodeError(
            f"the data source of saved query {query.name!r} is gone", retryable=False, error_type="NotFound"
        )
    return await engine.run(source, secrets_for_run(store, source), query, args, timeout=timeout, row_limit=row_limit)


def secrets_for_run(store: DataSourceStore, source: DataSource) -> dict[str, str]:
    """The source's decrypted secrets; a missing or wrong ``FLOWDECK_SECRET_KEY`` is a non-retryable ``NodeError``."""
    try:
        return dict(store.secrets_of(source))
    except (SecretKeyMissingError, SecretDecryptionError) as exc:
        raise NodeError(f"data source {source.name!r}: {exc}", retryable=False, error_type="ConfigError") from None


async def load_source(store: DataSourceStore, tenant_id: str, source_id: str) -> tuple[DataSource, dict[str, str]]:
    """The tenant's data source and its secrets, for a run; another tenant's id is "does not exist" as well."""
    source = await store.get_source(tenant_id, source_id)
    if source is None:
        raise NodeError(f"data source {source_id!r} does not exist", retryable=False, error_type="NotFound")
    return source, secrets_for_run(store, source)


async def run_saved_query(
    store: DataSourceStore,
    engine: QueryEngine,
    tenant_id: str,
    query_id: str,
    args: Any,
    *,
    timeout: float | None = None,
    row_limit: int | None = None,
) -> dict[str, Any]:
    """Load the tenant's saved query and run it; every failure is a ``NodeError`` (not found is not retryable)."""
    query = await store.get_query(tenant_id, query_id)
    if query is None:
        raise NodeError(f"saved query {query_id!r} does not exist", retryable=False, error_type="NotFound")
    return await _run(store, engine, query, args, timeout, row_limit)


class DataService:
    def __init__(self, store: DataSourceStore, engine: QueryEngine) -> None:
        self.store = store
        self.engine = engine

    def _check_target(self, name: Any, kind: Any, config: Any) -> None:
        """Refuse (400 naming the field) what is invalid or points where a data source may not."""
        validate_source(name, kind, config, {})
        issues = self.engine.check_source(kind, config)
        if issues:
            raise QueryValidationError(issues)

    def rules(self) -> dict[str, Any]:
        """Where data sources may point on this server, for the form to say before a save is refused."""
        return {"sqliteDirectories": list(self.engine.sqlite.shown_directories)}

    async def create_data_source(self, tenant_id: str, body: Any) -> dict[str, Any]:
        fields = _body(body, _SOURCE_KEYS)
        self._check_target(fields.get("name"), fields.get("kind"), fields.get("config", {}))
        source = await self.store.create_source(
            tenant_id,
            name=fields.get("name"),
            kind=fields.get("kind"),
            config=fields.get("config", {}),
            secrets=fields.get("secrets") or {},
        )
        return source_view(source)

    async def list_data_sources(self, tenant_id: str, *, cursor: str | None = None, limit: int = 50) -> dict[str, Any]:
        limit = _limit(limit)
        items = await self.store.list_sources(tenant_id, after=_after(cursor), limit=limit + 1)
        return {"items": [source_view(s) for s in items[:limit]], "nextCursor": _cursor(items, limit)}

    async def get_data_source(self, tenant_id: str, source_id: str) -> dict[str, Any]:
        source = await self.store.get_source(tenant_id, source_id)
        if source is None:
            raise NotFoundError("data source", source_id)
        return source_view(source)

    async def update_data_source(self, tenant_id: str, source_id: str, body: Any) -> dict[str, Any]:
        fields = _body(body, _SOURCE_KEYS)
        secrets = fields.get("secrets")
        if isinstance(secrets, Mapping):
            secrets = {k: v for k, v in secrets.items() if v != SECRET_MASK}
        current = await self.store.get_source(tenant_id, source_id)
        if current is None:
            raise NotFoundError("data source", source_id)
        if "kind" in fields and fields["kind"] != current.kind:
            raise QueryValidationError([ConfigIssue("kind", "the kind of a data source cannot change")])
        if fields.get("config") is not None and fields["config"] != current.config:
            self._check_target(fields.get("name") or current.name, current.kind, fields["config"])
        source = await self.store.update_source(
            tenant_id, source_id, name=fields.get("name"), config=fields.get("config"), secrets=secrets
        )
        await self.engine.forget(source_id)
        return source_view(source)

    async def delete_data_source(self, tenant_id: str, source_id: str) -> None:
        if not await self.store.delete_source(tenant_id, source_id):
            raise NotFoundError("data source", source_id)
        await self.engine.forget(source_id)

    async def test_data_source(self, tenant_id: str, body: Any) -> dict[str, Any]:
        """Try an unsaved data source (a body as for create; ``name`` optional): ``{ok, message, latencyMs}``."""
        fields = _body(body, _SOURCE_KEYS)
        name, kind, config = fields.get("name") or "unsaved", fields.get("kind"), fields.get("config", {})
        secrets = fields.get("secrets") or {}
        if isinstance(secrets, Mapping):  # a form may send the mask back: nothing is stored to keep here
            secrets = {k: v for k, v in secrets.items() if v != SECRET_MASK}
        validate_source(name, kind, config, secrets)
        self._check_target(name, kind, config)
        source = DataSource("unsaved", tenant_id, str(name).strip(), str(kind), dict(config), tuple(secrets), 0.0, 0.0)
        return await self.engine.probe(source, secrets)

    async def test_saved_data_source(self, tenant_id: str, source_id: str) -> dict[str, Any]:
        """Try one of the tenant's saved data sources as it is stored: ``{ok, message, latencyMs}`` (one saved
        before a rule that now refuses it answers ``ok: false`` saying why)."""
        source = await self.store.get_source(tenant_id, source_id)
        if source is None:
            raise NotFoundError("data source", source_id)
        try:
            secrets = self.store.secrets_of(source)
        except (SecretKeyMissingError, SecretDecryptionError) as exc:
            return {"ok": False, "message": f"data source {source.name!r}: {exc}", "latencyMs": 0.0}
        return await self.engine.probe(source, secrets)

    async def create_query(self, tenant_id: str, body: Any) -> dict[str, Any]:
        fields = _body(body, _QUERY_KEYS)
        query = await self.store.create_query(
            tenant_id,
            name=fields.get("name"),
            data_source_id=fields.get("dataSourceId"),
            parameters=fields.get("parameters", []),
            definition={k: fields[k] for k in _DEFINITION_KEYS if k in fields},
            kind=fields.get("kind"),
        )
        return query_view(query)

    async def list_queries(
        self, tenant_id: str, *, data_source_id: str | None = None, cursor: str | None = None, limit: int = 50
    ) -> dict[str, Any]:
        limit = _limit(limit)
        items = await self.store.list_queries(
            tenant_id, data_source_id=data_source_id, after=_after(cursor), limit=limit + 1
        )
        return {"items": [query_view(q) for q in items[:limit]], "nextCursor": _cursor(items, limit)}

    async def get_query(self, tenant_id: str, query_id: str) -> dict[str, Any]:
        query = await self.store.get_query(tenant_id, query_id)
        if query is None:
            raise NotFoundError("saved query", query_id)
        return query_view(query)

    async def update_query(self, tenant_id: str, query_id: str, body: Any) -> dict[str, Any]:
        fields = _body(body, _QUERY_KEYS)
        current = await self.store.get_query(tenant_id, query_id)
        if current is None:
            raise NotFoundError("saved query", query_id)
        query = await self.store.update_query(
            tenant_id,
            query_id,
            name=fields.get("name"),
            data_source_id=fields.get("dataSourceId"),
            parameters=fields.get("parameters"),
            definition={k: fields[k] for k in _DEFINITION_KEYS if k in fields},
            kind=fields.get("kind"),
        )
        return query_view(query)

    async def delete_query(self, tenant_id: str, query_id: str) -> None:
        if not await self.store.delete_query(tenant_id, query_id):
            raise NotFoundError("saved query", query_id)

    async def preview(
        self, tenant_id: str, query_id: str, args: Any = None, *, row_limit: int | None = None
    ) -> dict[str, Any]:
        """Run a saved query now with ``args`` (``POST /api/queries/{id}/preview``)."""
        query = await self.store.get_query(tenant_id, query_id)
        if query is None:
            raise NotFoundError("saved query", query_id)
        return await _run(self.store, self.engine, query, {} if args is None else args, None, row_limit)
