"""Authentication: the session cookie (browsers, with CSRF protection) or ``Authorization: Bearer <token>``.

A cookie rides along on requests a browser makes for any site, so a cookie-authenticated request
that changes something must also carry the session's CSRF token in ``X-CSRF-Token`` (a value another
site cannot read), and must not come from another origin. A bearer token is never sent implicitly,
so token requests need neither check.
"""

from __future__ import annotations

from typing import Any, Final
from urllib.parse import urlsplit

from litestar.connection import ASGIConnection
from litestar.datastructures import Cookie
from litestar.exceptions import NotAuthorizedException, PermissionDeniedException
from litestar.middleware import AbstractAuthenticationMiddleware, AuthenticationResult, DefineMiddleware

from flowdeck.accounts.credentials import SESSION_COOKIE, same_secret
from flowdeck.accounts.principal import Principal
from flowdeck.accounts.service import NewSession
from flowdeck.api.context import AppContext

__all__ = (
    "CSRF_COOKIE",
    "CSRF_HEADER",
    "PUBLIC",
    "SESSION_COOKIE",
    "AuthMiddleware",
    "auth_middleware",
    "check_same_origin",
    "clear_session_cookies",
    "session_cookies",
)

CSRF_COOKIE: Final = "flowdeck_csrf"
CSRF_HEADER: Final = "X-CSRF-Token"
PUBLIC: Final = "public"
"""Route ``opt`` key: ``opt={PUBLIC: True}`` needs no authentication."""
_SAFE_METHODS: Final = frozenset({"GET", "HEAD", "OPTIONS"})


def session_cookies(session: NewSession, secure: bool) -> list[Cookie]:
    """The HttpOnly session cookie, and the CSRF token in a cookie the page's script can read."""
    csrf = session.principal.csrf_token or ""
    common: dict[str, Any] = {"path": "/", "max_age": session.max_age, "samesite": "lax", "secure": secure}
    return [
        Cookie(key=SESSION_COOKIE, value=session.cookie_value, httponly=True, **common),
        Cookie(key=CSRF_COOKIE, value=csrf, httponly=False, **common),
    ]


def clear_session_cookies() -> list[Cookie]:
    return [
        Cookie(key=name, value="", path="/", max_age=0, expires=0, samesite="lax")
        for name in (SESSION_COOKIE, CSRF_COOKIE)
    ]


def check_same_origin(connection: ASGIConnection[Any, Any, Any, Any]) -> None:
    """Refuse a request whose ``Origin`` names another site (browsers send it on cross-site POSTs)."""
    origin = connection.headers.get("origin")
    if origin is None:
        return
    host = connection.headers.get("host", "")
    if urlsplit(origin).netloc != host:
        raise PermissionDeniedException(detail="cross-site request refused")


def _check_csrf(connection: ASGIConnection[Any, Any, Any, Any], principal: Principal) -> None:
    check_same_origin(connection)
    sent = connection.headers.get(CSRF_HEADER.lower())
    if not sent or principal.csrf_token is None or not same_secret(sent, principal.csrf_token):
        raise PermissionDeniedException(
            detail=f"missing or wrong {CSRF_HEADER} header (the csrfToken of GET /api/auth/me)"
        )


class AuthMiddleware(AbstractAuthenticationMiddleware):
    async def authenticate_request(self, connection: ASGIConnection[Any, Any, Any, Any]) -> AuthenticationResult:
        context: AppContext = connection.app.state.context
        accounts = context.services.accounts
        header = connection.headers.get("authorization")
        if header is not None:
            scheme, _, value = header.partition(" ")
            if scheme.lower() != "bearer" or not value.strip():
                raise NotAuthorizedException(detail="use the header Authorization: Bearer <api token>")
            principal = await accounts.authenticate_token(value.strip())
            if principal is None:
                raise NotAuthorizedException(detail="the API token is unknown, expired or revoked")
            return AuthenticationResult(user=principal, auth="token")
        cookie = connection.cookies.get(SESSION_COOKIE)
        if cookie:
            principal = await accounts.authenticate_session(cookie)
            if principal is not None:
                if connection.scope.get("method", "GET") not in _SAFE_METHODS:
                    _check_csrf(connection, principal)
                return AuthenticationResult(user=principal, auth="session")
        raise NotAuthorizedException(detail="sign in first, or send Authorization: Bearer <api token>")


def auth_middleware() -> DefineMiddleware:
    return DefineMiddleware(AuthMiddleware, exclude=["^/schema"], exclude_from_auth_key=PUBLIC)
