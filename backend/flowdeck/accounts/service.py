"""Account operations for the API and the CLI: log in, sessions, API tokens, login links, users.

Every secret handed out (session cookie, API token, login link) is random and stored only as its
hash; the plain value exists once, in the response or on the terminal.
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from flowdeck.accounts.credentials import hash_secret, is_api_token, new_api_token, new_secret
from flowdeck.accounts.passwords import MAX_PASSWORD_CHARS, MIN_PASSWORD_CHARS, PasswordService, generate_password
from flowdeck.accounts.principal import Principal
from flowdeck.accounts.rate_limit import LoginRateLimiter
from flowdeck.accounts.revocation import RevocationSink, api_token_key, ignore_revocations, session_key
from flowdeck.accounts.store import AccountStore, TokenRow, UserExistsError, UserRow
from flowdeck.storage.database import Database
from flowdeck.storage.disconnects import is_disconnect
from flowdeck.storage.tenants import TenantStore

log = logging.getLogger(__name__)

__all__ = (
    "AccountError",
    "AccountsService",
    "InvalidCredentialsError",
    "NewSession",
    "UserExistsError",
    "normalize_email",
)

SESSION_IDLE_SECONDS = 7 * 86400.0
SESSION_MAX_SECONDS = 30 * 86400.0
SESSION_TOUCH_SECONDS = 60.0
TOKEN_TOUCH_SECONDS = 60.0
LOGIN_LINK_SECONDS = 24 * 3600.0
BOOTSTRAP_EMAIL = "admin@flowdeck.local"
BOOTSTRAP_TENANT = "default"

_EMAIL = re.compile(r"[^@\s\x00]{1,200}@[^@\s\x00]{1,200}")


class AccountError(ValueError):
    """A request the account rules refuse (bad email, weak password...); ``field`` names the body field."""

    def __init__(self, message: str, field: str | None = None) -> None:
        super().__init__(message)
        self.field = field


class InvalidCredentialsError(Exception):
    pass


def normalize_email(email: str) -> str:
    return email.strip().lower()


def check_email(email: str) -> str:
    normalized = normalize_email(email)
    if len(normalized) > 320 or not _EMAIL.fullmatch(normalized):
        raise AccountError(f"{email!r} is not an email address")
    return normalized


def check_password(password: str, field: str | None = None) -> None:
    if not MIN_PASSWORD_CHARS <= len(password) <= MAX_PASSWORD_CHARS:
        raise AccountError(f"a password needs {MIN_PASSWORD_CHARS} to {MAX_PASSWORD_CHARS} characters", field)
    if "\x00" in password:
        raise AccountError("a password cannot contain NUL characters", field)


@dataclass(frozen=True, slots=True)
class NewSession:
    principal: Principal
    cookie_value: str
    max_age: int


def _session_principal(user: UserRow, session_id: str, csrf_token: str) -> Principal:
    return Principal(
        user.id, user.tenant_id, user.tenant_name, user.email, "session", session_id=session_id, csrf_token=csrf_token
    )


class AccountsService:
    def __init__(
        self,
        db: Database,
        passwords: PasswordService,
        limiter: LoginRateLimiter,
        clock: Callable[[], float] = time.time,
        on_revoke: RevocationSink = ignore_revocations,
    ) -> None:
        self.store = AccountStore(db)
        self.on_revoke = on_revoke
        """Told every session and API token that ends here: their live connections are closed."""
        self.tenants = TenantStore(db)
        self.passwords = passwords
        self.limiter = limiter
        self.clock = clock

    # -- users (CLI) -------------------------------------------------------------------------------
    async def create_user(self, email: str, tenant_name: str, password: str | None) -> UserRow:
        email = check_email(email)
        if password is not None:
            check_password(password)
        tenant_name = tenant_name.strip()
        if not 1 <= len(tenant_name) <= 200 or "\x00" in tenant_name:
            raise AccountError("a tenant name needs 1 to 200 characters")
        password_hash = None if password is None else await self.passwords.hash(password)
        tenant_id = await self.tenants.ensure(tenant_name)
        user_id = await self.store.create_user(tenant_id, email, password_hash, self.clock())
        return UserRow(user_id, tenant_id, tenant_name, email, password_hash)

    async def set_password(self, email: str, password: str) -> None:
        check_password(password)
        user = await self._user(email)
        await self.store.set_password(user.id, await self.passwords.hash(password))

    async def change_password(self, principal: Principal, current: str, new: str, address: str) -> None:
        """The signed-in user's own password; every other session of theirs ends (this one stays).

        A wrong current password counts as a failed login (the same limit), so a stolen session
        cannot be used to guess it.
        """
        user = await self.store.user_by_id(principal.user_id)
        if user is None:
            raise AccountError("the user no longer exists")
        await self.limiter.attempt(user.email, address)  # counted before the check, like a login
        if not await self.passwords.verify(user.password_hash, current):
            await self.limiter.failed()
            raise AccountError("the current password is wrong", "currentPassword")
        await self.limiter.succeeded(user.email, address)
        check_password(new, "newPassword")
        await self.store.set_password(user.id, await self.passwords.hash(new))
        ended = await self.store.delete_sessions(user.id, keep=principal.session_id)
        self.on_revoke([session_key(session_id) for session_id in ended])  # their live connections close too

    async def _user(self, email: str) -> UserRow:
        user = await self.store.user_by_email(normalize_email(email))
        if user is None:
            raise AccountError(f"no user with the email {email}")
        return user

    # -- password login and sessions ---------------------------------------------------------------
    async def login(self, email: str, password: str, address: str) -> NewSession:
        """A session for a correct email and password; else ``RateLimitedError`` / ``InvalidCredentialsError``."""
        email = normalize_email(email)
        await self.limiter.attempt(email, address)  # counted before the check: parallel guesses cannot pass it
        user = await self.store.user_by_email(email) if len(email) <= 320 else None
        ok = await self.passwords.verify(user.password_hash if user else None, password)
        if user is None or not ok:
            await self.limiter.failed()
            raise InvalidCredentialsError("wrong email or password")
        await self.limiter.succeeded(email, address)
        if user.password_hash and self.passwords.needs_rehash(user.password_hash):
            await self.store.set_password(user.id, await self.passwords.hash(password))
        return await self._new_session(user)

    async def _new_session(self, user: UserRow) -> NewSession:
        now = self.clock()
        cookie_value, csrf_token = new_secret(), new_secret()
        session_id = hash_secret(cookie_value)
        await self.store.create_session(session_id, user.id, csrf_token, now, now + SESSION_IDLE_SECONDS)
        await self.store.mark_login(user.id, now)
        principal = _session_principal(user, session_id, csrf_token)
        return NewSession(principal, cookie_value, int(SESSION_MAX_SECONDS))

    async def authenticate_session(self, cookie_value: str) -> Principal | None:
        if not cookie_value or len(cookie_value) > 128:
            return None
        now, session_id = self.clock(), hash_secret(cookie_value)
        row = await self.store.session(session_id, now)
        if row is None:
            return None
        if now - row.last_seen_at > SESSION_TOUCH_SECONDS:  # sliding expiry, written at most once a minute
            expires = min(now + SESSION_IDLE_SECONDS, row.created_at + SESSION_MAX_SECONDS)
            await self.store.touch_session(session_id, now, expires)
        return _session_principal(row.user, session_id, row.csrf_token)

    async def logout(self, principal: Principal) -> None:
        if principal.session_id is not None:
            await self.store.delete_session(principal.session_id)
            self.on_revoke([session_key(principal.session_id)])

    # -- API tokens --------------------------------------------------------------------------------
    async def authenticate_token(self, token: str) -> Principal | None:
        if not is_api_token(token):
            return None
        now = self.clock()
        found = await self.store.token_user(hash_secret(token), now)
        if found is None:
            return None
        token_id, last_used, user = found
        if last_used is None or now - last_used > TOKEN_TOUCH_SECONDS:
            try:
                await self.store.touch_token(token_id, now)
            except Exception as exc:
                if not is_disconnect(exc):
                    raise
                # Bookkeeping for the token list: a request is not refused for it (PostgreSQL went away
                # mid-write; the next use notes it again).
                log.warning("could not note the use of API token %s: %s", token_id, exc)
        return Principal(user.id, user.tenant_id, user.tenant_name, user.email, "token", token_id=token_id)

    async def create_token(self, principal: Principal, name: str, expires_in_days: int | None) -> tuple[TokenRow, str]:
        user = await self.store.user_by_id(principal.user_id)
        if user is None:
            raise AccountError("the user no longer exists")
        return await self._create_token(user, name, expires_in_days)

    async def create_token_for_email(self, email: str, name: str) -> tuple[TokenRow, str]:
        return await self._create_token(await self._user(email), name, None)

    async def _create_token(self, user: UserRow, name: str, expires_in_days: int | None) -> tuple[TokenRow, str]:
        token, prefix = new_api_token()
        now = self.clock()
        expires = None if expires_in_days is None else now + expires_in_days * 86400.0
        row = await self.store.create_token(user, name, hash_secret(token), prefix, now, expires)
        return row, token

    async def list_tokens(self, principal: Principal) -> Sequence[TokenRow]:
        return await self.store.list_tokens(principal.user_id, principal.tenant_id)

    async def revoke_token(self, principal: Principal, token_id: str) -> bool:
        revoked = await self.store.revoke_token(principal.user_id, principal.tenant_id, token_id, self.clock())
        if revoked:
            self.on_revoke([api_token_key(token_id)])
        return revoked

    # -- one-time login links ----------------------------------------------------------------------
    async def create_login_link(self, user_id: str, ttl_seconds: float = LOGIN_LINK_SECONDS) -> str:
        secret, now = new_secret(), self.clock()
        await self.store.create_login_link(hash_secret(secret), user_id, now, now + ttl_seconds)
        return secret

    async def use_login_link(self, secret: str) -> NewSession | None:
        if not secret or len(secret) > 128:
            return None
        user_id = await self.store.consume_login_link(hash_secret(secret), self.clock())
        user = None if user_id is None else await self.store.user_by_id(user_id)
        return None if user is None else await self._new_session(user)

    async def bootstrap(self) -> tuple[UserRow, str, str] | None:
        """On a database without users: an admin user, its generated password and a one-time login link."""
        if await self.store.count_users() > 0:
            return None
        password = generate_password()
        try:
            user = await self.create_user(BOOTSTRAP_EMAIL, BOOTSTRAP_TENANT, password)
        except UserExistsError:  # another process got there first
            return None
        return user, password, await self.create_login_link(user.id)
