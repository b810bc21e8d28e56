"""Dependencies injected into the controllers, and the parameter types they share. The only place with ``Provide``."""

from __future__ import annotations

from typing import Annotated, Any, Final

from litestar import Request
from litestar.datastructures import State
from litestar.di import NamedDependency, Provide
from litestar.params import PathParameter, QueryParameter

from flowdeck.accounts.principal import Principal
from flowdeck.api.context import Services
from flowdeck.api.pagination import MAX_LIMIT

__all__ = (
    "DEPENDENCIES",
    "ID_PATTERN",
    "AppServices",
    "Caller",
    "Cursor",
    "Limit",
    "ObjectId",
    "VersionNumber",
    "client_address",
)

ID_PATTERN: Final = r"^[A-Za-z0-9_-]{1,64}$"

ObjectId = Annotated[str, PathParameter(pattern=ID_PATTERN, description="an object id (UUID)")]
VersionNumber = Annotated[int, PathParameter(ge=1, le=2**31 - 1)]
Cursor = Annotated[str | None, QueryParameter(max_length=512, description="nextCursor of the previous page")]
Limit = Annotated[int, QueryParameter(ge=1, le=MAX_LIMIT, description="page size")]
Caller = NamedDependency[Principal]
"""The authenticated caller (the auth middleware put it on the request)."""
AppServices = NamedDependency[Services]


def _principal(request: Request[Principal, Any, Any]) -> Principal:
    return request.user


def _services(state: State) -> Services:
    services: Services = state.context.services
    return services


def client_address(request: Request[Any, Any, Any]) -> str:
    return request.client.host if request.client else "unknown"


DEPENDENCIES: Final = {
    "principal": Provide(_principal, sync_to_thread=False),
    "services": Provide(_services, sync_to_thread=False),
}
