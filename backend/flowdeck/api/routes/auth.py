"""``/api/auth``: sign in and out with the session cookie, who am I, and one-time login links."""

from __future__ import annotations

from typing import Annotated, Any

from litestar import Controller, Request, Response, get, post
from litestar.exceptions import NotFoundException
from litestar.params import JSONBody, PathParameter
from litestar.response import Redirect
from litestar.status_codes import HTTP_200_OK, HTTP_204_NO_CONTENT

from flowdeck.accounts.principal import Principal
from flowdeck.api.auth import PUBLIC, check_same_origin, clear_session_cookies, session_cookies
from flowdeck.api.dependencies import AppServices, Caller, client_address
from flowdeck.api.openapi import SIGNED_IN, errors
from flowdeck.api.schemas import LoginRequest, PasswordChange, SessionOut, UserOut

__all__ = ("AuthController", "session_out")

LinkSecret = Annotated[str, PathParameter(min_length=1, max_length=128, pattern=r"^[A-Za-z0-9_-]+$")]


def session_out(principal: Principal) -> SessionOut:
    user = UserOut(
        id=principal.user_id, email=principal.email, tenant_id=principal.tenant_id, tenant_name=principal.tenant_name
    )
    return SessionOut(user=user, auth_method=principal.method, csrf_token=principal.csrf_token)


def _secure(request: Request[Any, Any, Any]) -> bool:
    return request.url.scheme == "https"


class AuthController(Controller):
    path = "/api/auth"
    tags = ["auth"]

    @post(
        "/login",
        opt={PUBLIC: True},
        status_code=HTTP_200_OK,
        raises=errors(400, 401, 403, 429, public=True),
    )
    async def login(
        self, request: Request[Any, Any, Any], data: JSONBody[LoginRequest], services: AppServices
    ) -> Response[SessionOut]:
        """Sign in with email and password: sets the session cookie; answers the CSRF token to send back."""
        check_same_origin(request)
        session = await services.accounts.login(data.email, data.password, client_address(request))
        return Response(session_out(session.principal), cookies=session_cookies(session, _secure(request)))

    @post(
        "/logout",
        status_code=HTTP_204_NO_CONTENT,
        raises=errors(),
        security=SIGNED_IN,
        response_cookies=clear_session_cookies(),
    )
    async def logout(self, principal: Caller, services: AppServices) -> None:
        """End the browser session (an API token stays valid: revoke it with DELETE /api/tokens/{id})."""
        await services.accounts.logout(principal)

    @post("/password", status_code=HTTP_204_NO_CONTENT, raises=errors(400, 429), security=SIGNED_IN)
    async def change_password(
        self, request: Request[Any, Any, Any], data: JSONBody[PasswordChange], principal: Caller, services: AppServices
    ) -> None:
        """Change the caller's password (``{currentPassword, newPassword}``); their other sessions end.

        A wrong current password or a refused new one is a 400 whose ``extra`` names the field.
        """
        await services.accounts.change_password(
            principal, data.current_password, data.new_password, client_address(request)
        )

    @get("/me", raises=errors(), security=SIGNED_IN)
    async def me(self, principal: Caller) -> SessionOut:
        return session_out(principal)

    @get("/link/{secret:str}", opt={PUBLIC: True}, include_in_schema=False)
    async def use_link(self, request: Request[Any, Any, Any], secret: LinkSecret, services: AppServices) -> Redirect:
        """A one-time login link (printed by ``flowdeck serve`` on a fresh install): signs in and opens the editor."""
        session = await services.accounts.use_login_link(secret)
        if session is None:
            raise NotFoundException(detail="this login link is unknown, already used or expired")
        return Redirect(path="/", cookies=session_cookies(session, _secure(request)))
