"""``/api/tokens``: the caller's API tokens. The secret is answered once, at creation, and stored hashed."""

from __future__ import annotations

from litestar import Controller, delete, get, post
from litestar.exceptions import NotFoundException
from litestar.params import JSONBody
from litestar.status_codes import HTTP_201_CREATED, HTTP_204_NO_CONTENT

from flowdeck.accounts.store import TokenRow
from flowdeck.api.dependencies import AppServices, Caller, ObjectId
from flowdeck.api.openapi import SIGNED_IN, errors
from flowdeck.api.schemas import TokenCreate, TokenCreated, TokenOut, TokenPage

__all__ = ("TokenController",)


def _out(row: TokenRow) -> TokenOut:
    return TokenOut(
        id=row.id,
        name=row.name,
        prefix=row.prefix,
        created_at=row.created_at,
        last_used_at=row.last_used_at,
        expires_at=row.expires_at,
    )


class TokenController(Controller):
    path = "/api/tokens"
    tags = ["tokens"]
    security = SIGNED_IN

    @get(raises=errors())
    async def list_tokens(self, principal: Caller, services: AppServices) -> TokenPage:
        """The caller's live (not revoked) tokens, newest first."""
        return TokenPage(items=[_out(row) for row in await services.accounts.list_tokens(principal)])

    @post(status_code=HTTP_201_CREATED, raises=errors(400, 413))
    async def create_token(self, data: JSONBody[TokenCreate], principal: Caller, services: AppServices) -> TokenCreated:
        """A new token for the caller; ``token`` is the secret, shown only in this answer."""
        row, secret = await services.accounts.create_token(principal, data.name, data.expires_in_days)
        out = _out(row)
        return TokenCreated(**{f: getattr(out, f) for f in out.__struct_fields__}, token=secret)

    @delete("/{token_id:str}", status_code=HTTP_204_NO_CONTENT, raises=errors(400, 404))
    async def revoke_token(self, token_id: ObjectId, principal: Caller, services: AppServices) -> None:
        if not await services.accounts.revoke_token(principal, token_id):
            raise NotFoundException(detail=f"token {token_id} not found")
