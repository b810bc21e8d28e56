"""The SQL of accounts: users, sessions, API tokens and login links (SQLAlchemy Core, both dialects)."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass

import sqlalchemy as sa

from flowdeck.storage.account_tables import api_tokens, login_links, user_sessions, users
from flowdeck.storage.database import Database
from flowdeck.storage.tables import tenants

__all__ = ("AccountStore", "SessionRow", "TokenRow", "UserExistsError", "UserRow")


class UserExistsError(Exception):
    pass


@dataclass(frozen=True, slots=True)
class UserRow:
    id: str
    tenant_id: str
    tenant_name: str
    email: str
    password_hash: str | None


@dataclass(frozen=True, slots=True)
class SessionRow:
    user: UserRow
    csrf_token: str
    created_at: float
    last_seen_at: float


@dataclass(frozen=True, slots=True)
class TokenRow:
    id: str
    name: str
    prefix: str
    created_at: float
    last_used_at: float | None
    expires_at: float | None


_USER_COLUMNS = (users.c.id, users.c.tenant_id, tenants.c.name, users.c.email, users.c.password_hash)
_USERS = users.join(tenants, tenants.c.id == users.c.tenant_id)
_p = sa.bindparam
# Built once: these run on every authenticated request, and building a statement costs more than SQLite
# takes to run it.
_TOKEN_USER = (
    sa.select(api_tokens.c.id, api_tokens.c.last_used_at, *_USER_COLUMNS)
    .select_from(api_tokens.join(_USERS, users.c.id == api_tokens.c.user_id))
    .where(
        api_tokens.c.token_hash == _p("p_hash"),
        api_tokens.c.revoked_at.is_(None),
        sa.or_(api_tokens.c.expires_at.is_(None), api_tokens.c.expires_at > _p("p_now")),
        users.c.disabled_at.is_(None),
    )
)
_TOUCH_TOKEN = api_tokens.update().where(api_tokens.c.id == _p("p_id")).values(last_used_at=_p("p_now"))
_SESSION = (
    sa.select(*_USER_COLUMNS, user_sessions.c.csrf_token, user_sessions.c.created_at)
    .add_columns(user_sessions.c.last_seen_at)
    .select_from(user_sessions.join(_USERS, users.c.id == user_sessions.c.user_id))
    .where(user_sessions.c.id == _p("p_id"), user_sessions.c.expires_at > _p("p_now"), users.c.disabled_at.is_(None))
)
_TOKEN_COLUMNS = (
    api_tokens.c.id,
    api_tokens.c.name,
    api_tokens.c.prefix,
    api_tokens.c.created_at,
    api_tokens.c.last_used_at,
    api_tokens.c.expires_at,
)


class AccountStore:
    def __init__(self, db: Database) -> None:
        self.db = db

    # -- users -------------------------------------------------------------------------------------
    async def count_users(self) -> int:
        async with self.db.read() as conn:
            return int((await conn.execute(sa.select(sa.func.count()).select_from(users))).scalar_one())

    async def user_by_email(self, email: str) -> UserRow | None:
        stmt = sa.select(*_USER_COLUMNS).select_from(_USERS)
        stmt = stmt.where(users.c.email == email, users.c.disabled_at.is_(None))
        async with self.db.read() as conn:
            row = (await conn.execute(stmt)).first()
        return None if row is None else UserRow(*row)

    async def user_by_id(self, user_id: str) -> UserRow | None:
        stmt = sa.select(*_USER_COLUMNS).select_from(_USERS).where(users.c.id == user_id, users.c.disabled_at.is_(None))
        async with self.db.read() as conn:
            row = (await conn.execute(stmt)).first()
        return None if row is None else UserRow(*row)

    async def create_user(self, tenant_id: str, email: str, password_hash: str | None, now: float) -> str:
        user_id = str(uuid.uuid4())
        insert = self.db.insert(users).values(
            id=user_id, tenant_id=tenant_id, email=email, password_hash=password_hash, created_at=now
        )
        async with self.db.transaction() as conn:
            result = await conn.execute(insert.on_conflict_do_nothing(index_elements=["email"]))
        if result.rowcount != 1:
            raise UserExistsError(f"a user with the email {email} already exists")
        return user_id

    async def set_password(self, user_id: str, password_hash: str) -> None:
        async with self.db.transaction() as conn:
            await conn.execute(users.update().where(users.c.id == user_id).values(password_hash=password_hash))

    async def mark_login(self, user_id: str, now: float) -> None:
        async with self.db.transaction() as conn:
            await conn.execute(users.update().where(users.c.id == user_id).values(last_login_at=now))
            await conn.execute(user_sessions.delete().where(user_sessions.c.expires_at < now))

    # -- sessions ----------------------------------------------------------------------------------
    async def create_session(self, session_id: str, user_id: str, csrf_token: str, now: float, expires: float) -> None:
        async with self.db.transaction() as conn:
            await conn.execute(
                user_sessions.insert().values(
                    id=session_id,
                    user_id=user_id,
                    csrf_token=csrf_token,
                    created_at=now,
                    last_seen_at=now,
                    expires_at=expires,
                )
            )

    async def session(self, session_id: str, now: float) -> SessionRow | None:
        async with self.db.read() as conn:
            row = (await conn.execute(_SESSION, {"p_id": session_id, "p_now": now})).first()
        return None if row is None else SessionRow(UserRow(*row[:5]), row[5], row[6], row[7])

    async def touch_session(self, session_id: str, now: float, expires: float) -> None:
        stmt = user_sessions.update().where(user_sessions.c.id == session_id)
        async with self.db.transaction() as conn:
            await conn.execute(stmt.values(last_seen_at=now, expires_at=expires))

    async def delete_session(self, session_id: str) -> None:
        async with self.db.transaction() as conn:
            await conn.execute(user_sessions.delete().where(user_sessions.c.id == session_id))

    async def delete_sessions(self, user_id: str, *, keep: str | None = None) -> list[str]:
        """End every session of a user, but ``keep``; answers the ids of those that ended."""
        which = user_sessions.c.user_id == user_id
        if keep is not None:
            which = sa.and_(which, user_sessions.c.id != keep)
        async with self.db.transaction() as conn:
            ended = list((await conn.execute(sa.select(user_sessions.c.id).where(which))).scalars())
            if ended:
                await conn.execute(user_sessions.delete().where(user_sessions.c.id.in_(ended)))
        return ended

    # -- API tokens --------------------------------------------------------------------------------
    async def create_token(
        self, user: UserRow, name: str, token_hash: str, prefix: str, now: float, expires: float | None
    ) -> TokenRow:
        token_id = str(uuid.uuid4())
        values = {"id": token_id, "tenant_id": user.tenant_id, "user_id": user.id, "name": name}
        async with self.db.transaction() as conn:
            await conn.execute(
                api_tokens.insert().values(
                    **values, token_hash=token_hash, prefix=prefix, created_at=now, expires_at=expires
                )
            )
        return TokenRow(token_id, name, prefix, now, None, expires)

    async def token_user(self, token_hash: str, now: float) -> tuple[str, float | None, UserRow] | None:
        """The (token id, last used time, user) of a live token."""
        async with self.db.read() as conn:
            row = (await conn.execute(_TOKEN_USER, {"p_hash": token_hash, "p_now": now})).first()
        return None if row is None else (row[0], row[1], UserRow(*row[2:]))

    async def touch_token(self, token_id: str, now: float) -> None:
        async with self.db.transaction() as conn:
            await conn.execute(_TOUCH_TOKEN, {"p_id": token_id, "p_now": now})

    async def list_tokens(self, user_id: str, tenant_id: str) -> Sequence[TokenRow]:
        stmt = (
            sa.select(*_TOKEN_COLUMNS)
            .where(api_tokens.c.user_id == user_id, api_tokens.c.tenant_id == tenant_id)
            .where(api_tokens.c.revoked_at.is_(None))
            .order_by(api_tokens.c.created_at.desc(), api_tokens.c.id.desc())
        )
        async with self.db.read() as conn:
            return [TokenRow(*row) for row in await conn.execute(stmt)]

    async def revoke_token(self, user_id: str, tenant_id: str, token_id: str, now: float) -> bool:
        stmt = api_tokens.update().where(
            api_tokens.c.id == token_id,
            api_tokens.c.user_id == user_id,
            api_tokens.c.tenant_id == tenant_id,
            api_tokens.c.revoked_at.is_(None),
        )
        async with self.db.transaction() as conn:
            result = await conn.execute(stmt.values(revoked_at=now))
        return bool(result.rowcount == 1)

    # -- one-time login links ----------------------------------------------------------------------
    async def create_login_link(self, link_hash: str, user_id: str, now: float, expires: float) -> None:
        async with self.db.transaction() as conn:
            await conn.execute(
                login_links.insert().values(id=link_hash, user_id=user_id, created_at=now, expires_at=expires)
            )

    async def consume_login_link(self, link_hash: str, now: float) -> str | None:
        """Mark a live link used and return its user id; ``None`` if it is unknown, used or expired."""
        stmt = login_links.update().where(
            login_links.c.id == link_hash, login_links.c.used_at.is_(None), login_links.c.expires_at > now
        )
        async with self.db.transaction() as conn:
            if (await conn.execute(stmt.values(used_at=now))).rowcount != 1:
                return None
            user_id = await conn.execute(sa.select(login_links.c.user_id).where(login_links.c.id == link_hash))
            return str(user_id.scalar_one())
