"""Data sources and saved queries (SPEC §6): tenant-scoped CRUD, secrets encrypted on the way in.

Every method takes the tenant: another tenant's id behaves exactly like an id that does not exist.
What is saved is validated first (``QueryValidationError`` lists every problem); names are unique per
tenant (``NameTakenError``); a data source with saved queries cannot be deleted (``DataSourceInUseError``).
Secret values are only ever decrypted by ``secrets_of``, for the query engine. An update that changes
where a source points (``config.url`` / ``config.baseUrl``) drops the stored secrets: it must send
each of them again (or ``null`` to remove it), else it is refused naming ``secrets.<name>``, so a
stored secret is never sent to a place its owner did not type it for.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Mapping
from typing import Any

import sqlalchemy as sa

from flowdeck.domain.errors import ConfigIssue
from flowdeck.queries.errors import DataSourceInUseError, NameTakenError, NotFoundError, QueryValidationError
from flowdeck.queries.models import DataSource, SavedQuery
from flowdeck.queries.secrets import SecretBox
from flowdeck.queries.validation import points_elsewhere, validate_query, validate_source
from flowdeck.storage.data_tables import data_sources, saved_queries
from flowdeck.storage.database import Connection, Database

__all__ = ("DataSourceStore",)


def _source(row: Any) -> DataSource:
    m = row._mapping
    return DataSource(
        m["id"], m["tenant_id"], m["name"], m["kind"], dict(m["config"]), tuple(m["secret_names"]),
        m["created_at"], m["updated_at"], m["secrets"],
    )  # fmt: skip


def _query(row: Any) -> SavedQuery:
    m = row._mapping
    return SavedQuery(
        m["id"], m["tenant_id"], m["name"], m["data_source_id"], m["kind"], tuple(m["parameters"]),
        dict(m["definition"]), m["created_at"], m["updated_at"],
    )  # fmt: skip


def _page(table: sa.Table, tenant_id: str, after: tuple[str, str] | None, limit: int) -> sa.Select[Any]:
    stmt = sa.select(table).where(table.c.tenant_id == tenant_id)
    if after is not None:
        name, last_id = after
        stmt = stmt.where(sa.or_(table.c.name > name, sa.and_(table.c.name == name, table.c.id > last_id)))
    return stmt.order_by(table.c.name, table.c.id).limit(max(1, min(limit, 500)))


class DataSourceStore:
    def __init__(self, db: Database, secret_box: SecretBox) -> None:
        self.db = db
        self.secret_box = secret_box

    def secrets_of(self, source: DataSource) -> dict[str, str]:
        """The decrypted secret values (``SecretDecryptionError`` / ``SecretKeyMissingError`` if impossible)."""
        return {} if source.secrets_token is None else self.secret_box.decrypt(source.secrets_token)

    def _seal(self, secrets: Mapping[str, str]) -> str | None:
        return self.secret_box.encrypt(secrets) if secrets else None

    async def _write(self, what: str, name: str, conn_work: Any) -> Any:
        try:
            async with self.db.transaction() as conn:
                return await conn_work(conn)
        except sa.exc.IntegrityError:
            raise NameTakenError(what, name) from None

    # -- data sources -------------------------------------------------------------------------------

    async def create_source(
        self, tenant_id: str, *, name: Any, kind: Any, config: Any, secrets: Any = None
    ) -> DataSource:
        secrets = {} if secrets is None else secrets
        validate_source(name, kind, config, secrets)
        now, name = time.time(), name.strip()
        source = DataSource(
            str(uuid.uuid4()),
            tenant_id,
            name,
            kind,
            dict(config),
            tuple(sorted(secrets)),
            now,
            now,
            self._seal(secrets),
        )

        async def insert(conn: Connection) -> DataSource:
            await conn.execute(
                data_sources.insert().values(
                    id=source.id, tenant_id=tenant_id, name=name, kind=kind, config=source.config,
                    secret_names=list(source.secret_names), secrets=source.secrets_token, created_at=now,
                    updated_at=now,
                )
            )  # fmt: skip
            return source

        result: DataSource = await self._write("data source", name, insert)
        return result

    async def list_sources(
        self, tenant_id: str, *, after: tuple[str, str] | None = None, limit: int = 50
    ) -> list[DataSource]:
        """A page of the tenant's data sources by name, starting after ``(name, id)``."""
        async with self.db.read() as conn:
            return [_source(r) for r in await conn.execute(_page(data_sources, tenant_id, after, limit))]

    async def get_source(self, tenant_id: str, source_id: str) -> DataSource | None:
        stmt = sa.select(data_sources).where(data_sources.c.id == source_id, data_sources.c.tenant_id == tenant_id)
        async with self.db.read() as conn:
            row = (await conn.execute(stmt)).first()
        return None if row is None else _source(row)

    def _merged_secrets(
        self, old: DataSource, secrets: Any, moved: str | None = None
    ) -> tuple[dict[str, str], str | None]:
        """The secrets after an update (values only when they change) and their token.

        ``moved`` (the config key that now points elsewhere) drops every stored secret: each must be sent again.
        """
        if secrets is not None and not isinstance(secrets, Mapping):
            raise QueryValidationError([ConfigIssue("secrets", "secrets must be an object of names to strings")])
        if moved is not None:
            sent = secrets or {}
            again = [
                ConfigIssue(f"secrets.{name}", f"{moved} changed, so the stored secret is not sent there: "
                            f"send secrets.{name} again (or null to remove it)")
                for name in old.secret_names if name not in sent
            ]  # fmt: skip
            if again:
                raise QueryValidationError(again)
            base: Mapping[str, Any] = {}
        elif secrets is None:
            return dict.fromkeys(old.secret_names, ""), old.secrets_token
        else:
            base = self.secrets_of(old)
        merged = {k: v for k, v in {**base, **(secrets or {})}.items() if v is not None}
        bad = [ConfigIssue(f"secrets.{k}", "a secret is a string (null removes it)") for k, v in merged.items()
               if not isinstance(v, str)]  # fmt: skip
        if bad:
            raise QueryValidationError(bad)
        return merged, self._seal(merged)

    async def update_source(
        self, tenant_id: str, source_id: str, *, name: Any = None, config: Any = None, secrets: Any = None
    ) -> DataSource:
        """Change what is given: ``secrets`` merges (a ``None`` value removes that secret); kind never changes."""

        async def update(conn: Connection) -> DataSource:
            stmt = sa.select(data_sources).where(data_sources.c.id == source_id, data_sources.c.tenant_id == tenant_id)
            row = (await conn.execute(stmt.with_for_update())).first()
            if row is None:
                raise NotFoundError("data source", source_id)
            old = _source(row)
            new_name = old.name if name is None else name
            new_config = old.config if config is None else config
            moved = points_elsewhere(old.config, new_config) if isinstance(new_config, Mapping) else None
            if moved is not None:
                validate_source(new_name, old.kind, new_config, {})  # a bad config is named before the secrets
            merged, token = self._merged_secrets(old, secrets, moved)
            validate_source(new_name, old.kind, new_config, merged)
            now = max(time.time(), old.updated_at + 1e-6)
            source = DataSource(
                old.id, tenant_id, new_name.strip(), old.kind, dict(new_config), tuple(sorted(merged)),
                old.created_at, now, token,
            )  # fmt: skip
            await conn.execute(
                data_sources.update().where(data_sources.c.id == source_id).values(
                    name=source.name, config=source.config, secret_names=list(source.secret_names), secrets=token,
                    updated_at=now,
                )
            )  # fmt: skip
            return source

        result: DataSource = await self._write("data source", str(name), update)
        return result

    async def delete_source(self, tenant_id: str, source_id: str) -> bool:
        async with self.db.transaction() as conn:
            users = await conn.execute(
                sa.select(saved_queries.c.name)
                .where(saved_queries.c.data_source_id == source_id, saved_queries.c.tenant_id == tenant_id)
                .order_by(saved_queries.c.name)
            )
            names = [str(n) for (n,) in users]
            if names:
                raise DataSourceInUseError(source_id, names)
            result = await conn.execute(
                data_sources.delete().where(data_sources.c.id == source_id, data_sources.c.tenant_id == tenant_id)
            )
        return bool(result.rowcount == 1)

    # -- saved queries ------------------------------------------------------------------------------

    async def _source_in(self, conn: Connection, tenant_id: str, source_id: Any) -> DataSource:
        stmt = sa.select(data_sources).where(data_sources.c.id == str(source_id), data_sources.c.tenant_id == tenant_id)
        row = (await conn.execute(stmt)).first()
        if row is None:
            raise NotFoundError("data source", str(source_id))
        return _source(row)

    async def create_query(
        self,
        tenant_id: str,
        *,
        name: Any,
        data_source_id: Any,
        parameters: Any,
        definition: Mapping[str, Any],
        kind: Any = None,
    ) -> SavedQuery:
        """A new saved query on one of the tenant's data sources; its kind is the source's (``kind`` must agree)."""

        async def insert(conn: Connection) -> SavedQuery:
            source = await self._source_in(conn, tenant_id, data_source_id)
            if kind is not None and kind != source.kind:
                raise QueryValidationError([ConfigIssue("kind", f"the data source is of kind {source.kind!r}")])
            canonical = validate_query(name, source.kind, parameters, definition)
            now = time.time()
            query = SavedQuery(
                str(uuid.uuid4()),
                tenant_id,
                name.strip(),
                source.id,
                source.kind,
                tuple(parameters),
                canonical,
                now,
                now,
            )
            await conn.execute(
                saved_queries.insert().values(
                    id=query.id, tenant_id=tenant_id, data_source_id=source.id, name=query.name, kind=query.kind,
                    parameters=list(query.parameters), definition=canonical, created_at=now, updated_at=now,
                )
            )  # fmt: skip
            return query

        result: SavedQuery = await self._write("saved query", str(name), insert)
        return result

    async def list_queries(
        self,
        tenant_id: str,
        *,
        data_source_id: str | None = None,
        after: tuple[str, str] | None = None,
        limit: int = 50,
    ) -> list[SavedQuery]:
        stmt = _page(saved_queries, tenant_id, after, limit)
        if data_source_id is not None:
            stmt = stmt.where(saved_queries.c.data_source_id == data_source_id)
        async with self.db.read() as conn:
            return [_query(r) for r in await conn.execute(stmt)]

    async def get_query(self, tenant_id: str, query_id: str) -> SavedQuery | None:
        stmt = sa.select(saved_queries).where(saved_queries.c.id == query_id, saved_queries.c.tenant_id == tenant_id)
        async with self.db.read() as conn:
            row = (await conn.execute(stmt)).first()
        return None if row is None else _query(row)

    async def update_query(
        self,
        tenant_id: str,
        query_id: str,
        *,
        name: Any = None,
        data_source_id: Any = None,
        parameters: Any = None,
        definition: Mapping[str, Any] | None = None,
        kind: Any = None,
    ) -> SavedQuery:
        """Change what is given; ``definition`` keys replace the saved ones (``sql``, or ``method``, ``path`` ...)."""

        async def update(conn: Connection) -> SavedQuery:
            stmt = sa.select(saved_queries).where(
                saved_queries.c.id == query_id, saved_queries.c.tenant_id == tenant_id
            )
            row = (await conn.execute(stmt.with_for_update())).first()
            if row is None:
                raise NotFoundError("saved query", query_id)
            old = _query(row)
            source_id = old.data_source_id if data_source_id is None else data_source_id
            source = await self._source_in(conn, tenant_id, source_id)
            if kind is not None and kind != source.kind:
                raise QueryValidationError([ConfigIssue("kind", f"the data source is of kind {source.kind!r}")])
            new_name = old.name if name is None else name
            new_parameters = list(old.parameters) if parameters is None else parameters
            canonical = validate_query(new_name, source.kind, new_parameters, {**old.definition, **(definition or {})})
            now = max(time.time(), old.updated_at + 1e-6)
            query = SavedQuery(
                old.id, tenant_id, new_name.strip(), source.id, source.kind, tuple(new_parameters), canonical,
                old.created_at, now,
            )  # fmt: skip
            await conn.execute(
                saved_queries.update().where(saved_queries.c.id == query_id).values(
                    name=query.name, data_source_id=source.id, kind=source.kind, parameters=new_parameters,
                    definition=canonical, updated_at=now,
                )
            )  # fmt: skip
            return query

        result: SavedQuery = await self._write("saved query", str(name), update)
        return result

    async def delete_query(self, tenant_id: str, query_id: str) -> bool:
        async with self.db.transaction() as conn:
            result = await conn.execute(
                saved_queries.delete().where(saved_queries.c.id == query_id, saved_queries.c.tenant_id == tenant_id)
            )
        return bool(result.rowcount == 1)
