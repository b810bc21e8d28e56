"""What each operation may answer besides success, for the OpenAPI document (``raises=`` on the handlers)."""

from __future__ import annotations

from typing import Final

from litestar.exceptions import (
    ClientException,
    HTTPException,
    NotAuthorizedException,
    NotFoundException,
    PermissionDeniedException,
    TooManyRequestsException,
    ValidationException,
)
from litestar.exceptions.http_exceptions import RequestEntityTooLarge
from litestar.openapi.spec import SecurityRequirement
from litestar.status_codes import HTTP_409_CONFLICT

__all__ = ("SIGNED_IN", "ConflictException", "errors")


SIGNED_IN: Final[list[SecurityRequirement]] = [{"token": []}, {"session": []}]
"""The security requirement of every operation but the public ones: an API token or the session cookie."""


class ConflictException(ClientException):
    status_code = HTTP_409_CONFLICT


class BadGatewayException(HTTPException):
    """An upstream the request depends on failed (a data source that cannot be reached)."""

    status_code = 502


_BY_CODE: Final[dict[int, type[HTTPException]]] = {
    400: ValidationException,
    401: NotAuthorizedException,
    403: PermissionDeniedException,
    404: NotFoundException,
    409: ConflictException,
    413: RequestEntityTooLarge,
    429: TooManyRequestsException,
    502: BadGatewayException,
}


def errors(*codes: int, public: bool = False) -> list[type[HTTPException]]:
    """The error answers of an operation: ``codes``, plus 401 and 403 (sign-in, CSRF) unless it is public."""
    wanted = set(codes) | (set() if public else {401, 403})
    return [_BY_CODE[code] for code in sorted(wanted)]
