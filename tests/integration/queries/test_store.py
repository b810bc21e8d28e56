"""The data-source store on SQLite and PostgreSQL: tenant scoping, secrets at rest, validation, names."""

from __future__ import annotations

import pytest
import sqlalchemy as sa

from flowdeck.queries.errors import DataSourceInUseError, NameTakenError, NotFoundError, QueryValidationError
from flowdeck.queries.secrets import SecretBox, SecretDecryptionError, SecretKeyMissingError
from flowdeck.queries.store import DataSourceStore
from flowdeck.storage.data_tables import data_sources
from flowdeck.storage.database import Database
from flowdeck.storage.tenants import TenantStore

SQL_CONFIG = {"url": "postgresql+asyncpg://reporter@db.internal/sales"}


@pytest.fixture
def store(db: Database) -> DataSourceStore:
    return DataSourceStore(db, SecretBox("test-key-0123456789"))


async def test_data_sources_are_tenant_scoped_and_secrets_encrypted_at_rest(
    db: Database, store: DataSourceStore
) -> None:
    acme, other = await TenantStore(db).ensure("acme"), await TenantStore(db).ensure("other")
    created = await store.create_source(
        acme, name=" Sales ", kind="sql", config=SQL_CONFIG, secrets={"password": "pw-Zx81"}
    )
    assert (created.name, created.secret_names) == ("Sales", ("password",))
    async with db.read() as conn:
        raw = (await conn.execute(sa.select(data_sources.c.secrets, data_sources.c.config))).one()
    assert "pw-Zx81" not in raw.secrets and "pw-Zx81" not in str(raw.config)
    loaded = await store.get_source(acme, created.id)
    assert loaded == created and store.secrets_of(loaded) == {"password": "pw-Zx81"}
    assert "pw-Zx81" not in repr(loaded)
    # another tenant's id is not found, whatever it tries
    assert await store.get_source(other, created.id) is None
    assert await store.list_sources(other) == []
    with pytest.raises(NotFoundError):
        await store.update_source(other, created.id, name="mine now")
    assert await store.delete_source(other, created.id) is False
    assert [s.id for s in await store.list_sources(acme)] == [created.id]


async def test_updates_merge_secrets_and_move_updated_at(db: Database, store: DataSourceStore) -> None:
    acme = await TenantStore(db).ensure("acme")
    src = await store.create_source(acme, name="api", kind="http", config={"baseUrl": "https://api.example.com"},
                                    secrets={"Authorization": "Bearer a", "X-Key": "k"})  # fmt: skip
    renamed = await store.update_source(acme, src.id, name="API")
    assert store.secrets_of(renamed) == {"Authorization": "Bearer a", "X-Key": "k"}
    assert renamed.updated_at > src.updated_at
    changed = await store.update_source(acme, src.id, secrets={"Authorization": "Bearer b", "X-Key": None})
    assert changed.secret_names == ("Authorization",)
    assert store.secrets_of(await store.get_source(acme, src.id)) == {"Authorization": "Bearer b"}  # type: ignore[arg-type]
    with pytest.raises(QueryValidationError) as invalid:
        await store.update_source(acme, src.id, config={"baseUrl": "ftp://x"})
    assert [p.path for p in invalid.value.problems] == ["config.baseUrl"]


async def test_names_are_unique_per_tenant(db: Database, store: DataSourceStore) -> None:
    acme, other = await TenantStore(db).ensure("acme"), await TenantStore(db).ensure("other")
    first = await store.create_source(acme, name="db", kind="sql", config=SQL_CONFIG)
    await store.create_source(other, name="db", kind="sql", config=SQL_CONFIG)  # another tenant may
    with pytest.raises(NameTakenError):
        await store.create_source(acme, name="db", kind="sql", config=SQL_CONFIG)
    second = await store.create_source(acme, name="db2", kind="sql", config=SQL_CONFIG)
    with pytest.raises(NameTakenError):
        await store.update_source(acme, second.id, name="db")
    await store.create_query(acme, name="q", data_source_id=first.id, parameters=[], definition={"sql": "SELECT 1"})
    with pytest.raises(NameTakenError):
        await store.create_query(
            acme, name="q", data_source_id=second.id, parameters=[], definition={"sql": "SELECT 2"}
        )


async def test_saved_queries_validate_parameters_and_belong_to_the_tenant(db: Database, store: DataSourceStore) -> None:
    acme, other = await TenantStore(db).ensure("acme"), await TenantStore(db).ensure("other")
    src = await store.create_source(acme, name="db", kind="sql", config=SQL_CONFIG)
    with pytest.raises(QueryValidationError) as invalid:
        await store.create_query(acme, name="q", data_source_id=src.id, parameters=["customer", "unused"],
                                 definition={"sql": "SELECT * FROM t WHERE c = :customer AND d > :since"})  # fmt: skip
    assert [p.message for p in invalid.value.problems] == [
        "the sql uses :since, but 'since' is not declared in parameters",
        "parameter 'unused' is declared but the sql never uses :unused",
        "a colon that is not a parameter is written \\: (e.g. '10\\:30')",
    ]
    with pytest.raises(NotFoundError):  # another tenant's data source does not exist for this one
        await store.create_query(other, name="q", data_source_id=src.id, parameters=[], definition={"sql": "SELECT 1"})
    with pytest.raises(QueryValidationError, match="the data source is of kind 'sql'"):
        await store.create_query(acme, name="q", data_source_id=src.id, parameters=[], definition={}, kind="http")
    q = await store.create_query(
        acme, name="q", data_source_id=src.id, parameters=["c"], definition={"sql": "SELECT :c"}
    )
    assert (q.kind, q.parameters, q.definition) == ("sql", ("c",), {"sql": "SELECT :c"})
    assert await store.get_query(other, q.id) is None
    updated = await store.update_query(acme, q.id, parameters=["c", "d"], definition={"sql": "SELECT :c, :d"})
    assert (updated.parameters, updated.definition["sql"]) == (("c", "d"), "SELECT :c, :d")
    assert await store.get_query(acme, q.id) == updated
    with pytest.raises(DataSourceInUseError, match="used by 1 saved queries \\('q'\\)"):
        await store.delete_source(acme, src.id)
    assert await store.delete_query(other, q.id) is False
    assert await store.delete_query(acme, q.id) is True
    assert await store.delete_source(acme, src.id) is True
    assert await store.get_source(acme, src.id) is None


async def test_the_secret_key_is_needed_only_for_secrets(db: Database) -> None:
    acme = await TenantStore(db).ensure("acme")
    keyless = DataSourceStore(db, SecretBox(None))
    plain = await keyless.create_source(acme, name="public", kind="http", config={"baseUrl": "http://127.0.0.1:1"})
    assert keyless.secrets_of(plain) == {}
    with pytest.raises(SecretKeyMissingError, match="FLOWDECK_SECRET_KEY is not set"):
        await keyless.create_source(acme, name="private", kind="sql", config=SQL_CONFIG, secrets={"password": "x"})
    sealed = await DataSourceStore(db, SecretBox("key-one")).create_source(
        acme, name="private", kind="sql", config=SQL_CONFIG, secrets={"password": "x"}
    )
    with pytest.raises(SecretDecryptionError, match="was the key changed"):
        DataSourceStore(db, SecretBox("key-two")).secrets_of(sealed)


async def test_pointing_a_source_elsewhere_drops_its_secrets(db: Database, store: DataSourceStore) -> None:
    """The attack: move a source with a stored secret to one's own host and let Flowdeck send it there."""
    acme = await TenantStore(db).ensure("acme")
    api = await store.create_source(acme, name="api", kind="http", config={"baseUrl": "https://api.example.com"},
                                    secrets={"Authorization": "Bearer a", "X-Key": "k"})  # fmt: skip
    evil = {"baseUrl": "https://collector.example.net"}
    for secrets in (None, {}, {"Authorization": "Bearer a2"}):  # a form's "set" mask arrives here as "not sent"
        with pytest.raises(QueryValidationError) as refused:
            await store.update_source(acme, api.id, config=evil, secrets=secrets)
        paths = [p.path for p in refused.value.problems]
        assert "secrets.X-Key" in paths and "config.baseUrl changed" in refused.value.problems[0].message
    stored = await store.get_source(acme, api.id)
    assert stored is not None and stored.config == api.config
    assert store.secrets_of(stored) == {"Authorization": "Bearer a", "X-Key": "k"}
    moved = await store.update_source(
        acme, api.id, config={"baseUrl": "https://api.example.com/v2"}, secrets={"Authorization": "new", "X-Key": None}
    )
    assert (moved.secret_names, store.secrets_of(moved)) == (("Authorization",), {"Authorization": "new"})

    url = "postgresql://app@db1.example.com/app"
    sql = await store.create_source(acme, name="db", kind="sql", config={"url": url}, secrets={"password": "pw"})
    for elsewhere in (url.replace("db1", "db2"), url.replace(".com/", ".com:6543/"), url.replace("/app", "/other")):
        with pytest.raises(QueryValidationError) as refused:
            await store.update_source(acme, sql.id, config={"url": elsewhere})
        assert [p.path for p in refused.value.problems] == ["secrets.password"]
    same_place = await store.update_source(acme, sql.id, config={"url": url, "readOnly": False})
    assert store.secrets_of(same_place) == {"password": "pw"}
