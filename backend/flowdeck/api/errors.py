"""Domain errors -> HTTP answers, all in Litestar's JSON shape ``{status_code, detail, extra?}``."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from litestar import MediaType, Request, Response
from litestar.status_codes import (
    HTTP_400_BAD_REQUEST,
    HTTP_401_UNAUTHORIZED,
    HTTP_404_NOT_FOUND,
    HTTP_409_CONFLICT,
    HTTP_429_TOO_MANY_REQUESTS,
    HTTP_500_INTERNAL_SERVER_ERROR,
    HTTP_503_SERVICE_UNAVAILABLE,
)
from litestar.types import ExceptionHandlersMap

from flowdeck.accounts.rate_limit import RateLimitedError
from flowdeck.accounts.service import AccountError, InvalidCredentialsError
from flowdeck.api.inputs import InputInvalidError
from flowdeck.domain.errors import NodeError
from flowdeck.domain.labels import LabelError
from flowdeck.engine.engine import DefinitionInvalidError
from flowdeck.engine.flow_control import FlowKeyError
from flowdeck.engine.orchestrator import RunStateError
from flowdeck.engine.plans import RunNotFoundError
from flowdeck.engine.run_limits import TooManyActiveRunsError
from flowdeck.queries.errors import DataSourceInUseError, NameTakenError, NotFoundError, QueryValidationError
from flowdeck.queries.secrets import SecretKeyMissingError
from flowdeck.storage.disconnects import DatabaseUnavailableError, write_track
from flowdeck.storage.workflows import StaleVersionError
from flowdeck.widgets.errors import ConfigError, InputParamError

__all__ = ("EXCEPTION_HANDLERS", "error_response")

log = logging.getLogger(__name__)


def error_response(
    status_code: int, detail: str, extra: Any = None, headers: Mapping[str, str] | None = None
) -> Response[dict[str, Any]]:
    content: dict[str, Any] = {"status_code": status_code, "detail": detail}
    if extra is not None:
        content["extra"] = extra
    return Response(content, status_code=status_code, media_type=MediaType.JSON, headers=headers)


def _invalid_definition(_: Request[Any, Any, Any], exc: DefinitionInvalidError) -> Response[dict[str, Any]]:
    return error_response(HTTP_400_BAD_REQUEST, str(exc), [p.to_json() for p in exc.problems])


def _invalid_input(_: Request[Any, Any, Any], exc: InputInvalidError) -> Response[dict[str, Any]]:
    return error_response(HTTP_400_BAD_REQUEST, str(exc), [p.to_json() for p in exc.problems])


def _stale(_: Request[Any, Any, Any], exc: StaleVersionError) -> Response[dict[str, Any]]:
    return error_response(HTTP_409_CONFLICT, str(exc), {"latestVersion": exc.latest})


def _run_state(_: Request[Any, Any, Any], exc: RunStateError) -> Response[dict[str, Any]]:
    return error_response(HTTP_409_CONFLICT, str(exc))


def _not_found(_: Request[Any, Any, Any], exc: RunNotFoundError) -> Response[dict[str, Any]]:
    return error_response(HTTP_404_NOT_FOUND, str(exc))


def _rate_limited(_: Request[Any, Any, Any], exc: RateLimitedError) -> Response[dict[str, Any]]:
    return error_response(HTTP_429_TOO_MANY_REQUESTS, str(exc), headers={"Retry-After": str(exc.retry_after)})


def _too_many_runs(_: Request[Any, Any, Any], exc: TooManyActiveRunsError) -> Response[dict[str, Any]]:
    return error_response(HTTP_429_TOO_MANY_REQUESTS, str(exc), headers={"Retry-After": str(exc.retry_after)})


def _bad_credentials(_: Request[Any, Any, Any], exc: InvalidCredentialsError) -> Response[dict[str, Any]]:
    return error_response(HTTP_401_UNAUTHORIZED, str(exc))


def _account(_: Request[Any, Any, Any], exc: AccountError) -> Response[dict[str, Any]]:
    extra = None if exc.field is None else [{"path": exc.field, "message": str(exc)}]
    return error_response(HTTP_400_BAD_REQUEST, str(exc), extra)


def _query_invalid(_: Request[Any, Any, Any], exc: QueryValidationError) -> Response[dict[str, Any]]:
    problems = [{"path": p.path, "message": p.message} for p in exc.problems]
    return error_response(HTTP_400_BAD_REQUEST, str(exc), problems)


def _data_not_found(_: Request[Any, Any, Any], exc: NotFoundError) -> Response[dict[str, Any]]:
    return error_response(HTTP_404_NOT_FOUND, str(exc))


def _data_conflict(_: Request[Any, Any, Any], exc: NameTakenError | DataSourceInUseError) -> Response[dict[str, Any]]:
    return error_response(HTTP_409_CONFLICT, str(exc))


def _no_secret_key(_: Request[Any, Any, Any], exc: SecretKeyMissingError) -> Response[dict[str, Any]]:
    return error_response(HTTP_400_BAD_REQUEST, str(exc))


def _query_failed(_: Request[Any, Any, Any], exc: NodeError) -> Response[dict[str, Any]]:
    # Raised by a query preview: a retryable failure is the data source's (502), the rest the request's.
    return error_response(502 if exc.retryable else HTTP_400_BAD_REQUEST, exc.message, {"type": exc.error_type})


def _widget_invalid(_: Request[Any, Any, Any], exc: ConfigError | InputParamError) -> Response[dict[str, Any]]:
    return error_response(
        HTTP_400_BAD_REQUEST, str(exc), [{"key": exc.field, "source": exc.source, "message": exc.message}]
    )


def _bad_label(_: Request[Any, Any, Any], exc: LabelError) -> Response[dict[str, Any]]:
    return error_response(HTTP_400_BAD_REQUEST, str(exc), [{"key": exc.field, "message": exc.message}])


def _bad_flow_key(_: Request[Any, Any, Any], exc: FlowKeyError) -> Response[dict[str, Any]]:
    return error_response(HTTP_400_BAD_REQUEST, str(exc), [{"key": exc.field, "message": str(exc)}])


def _too_deep(request: Request[Any, Any, Any], exc: RecursionError) -> Response[dict[str, Any]]:
    # msgspec raises RecursionError on JSON nested about a thousand levels deep, while decoding the body.
    log.info("refused a request nested too deeply: %s %s", request.method, request.url.path)
    return error_response(HTTP_400_BAD_REQUEST, "the request body is nested too deeply")


def _database_away(_: Request[Any, Any, Any], exc: DatabaseUnavailableError) -> Response[dict[str, Any]]:
    # The one 5xx a lost connection may cost: PostgreSQL stayed away longer than the setting allows.
    log.warning("answered 503: %s", exc)
    return error_response(HTTP_503_SERVICE_UNAVAILABLE, str(exc), headers={"Retry-After": "5"})


def _unexpected(request: Request[Any, Any, Any], exc: Exception) -> Response[dict[str, Any]]:
    """What no other handler knows: a 500 that says nothing of itself, while the log says all of it. (A write
    whose connection was lost before it committed is run again instead: api/replay.py drops this answer, and
    the log says so in one line.)"""
    track = write_track.get()
    if track is not None and track.runs_again:
        cause = str(exc).splitlines()[0][:200]
        log.warning("%s %s lost its database connection (%s)", request.method, request.url.path, cause)
    else:
        log.error("unexpected error in %s %s", request.method, request.url.path, exc_info=exc)
    return error_response(HTTP_500_INTERNAL_SERVER_ERROR, "Internal Server Error")


EXCEPTION_HANDLERS: ExceptionHandlersMap = {
    HTTP_500_INTERNAL_SERVER_ERROR: _unexpected,
    DatabaseUnavailableError: _database_away,
    DefinitionInvalidError: _invalid_definition,
    InputInvalidError: _invalid_input,
    StaleVersionError: _stale,
    RunStateError: _run_state,
    RunNotFoundError: _not_found,
    RateLimitedError: _rate_limited,
    TooManyActiveRunsError: _too_many_runs,
    InvalidCredentialsError: _bad_credentials,
    AccountError: _account,
    RecursionError: _too_deep,
    QueryValidationError: _query_invalid,
    NotFoundError: _data_not_found,
    NameTakenError: _data_conflict,
    DataSourceInUseError: _data_conflict,
    SecretKeyMissingError: _no_secret_key,
    NodeError: _query_failed,
    ConfigError: _widget_invalid,
    LabelError: _bad_label,
    FlowKeyError: _bad_flow_key,
    InputParamError: _widget_invalid,
}
