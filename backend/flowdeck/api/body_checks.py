"""What a request body must be before any handler reads it: UTF-8 everywhere, and JSON where JSON is read.

Runs as the app's ``before_request`` hook, so it sees every route after authentication and before the
body is decoded. A body that is not UTF-8 is a 400 naming the first bad byte, on every endpoint
(JSON text is UTF-8, RFC 8259 §8.1; the decoder would raise ``UnicodeDecodeError`` deep inside a
handler otherwise). On a JSON endpoint (a handler with a ``data`` parameter) a non-empty body must be
sent as ``application/json`` (or ``application/*+json``), without a charset other than UTF-8, or it is
a 415. ``POST /hooks/{id}`` reads its raw body and does not look at the ``Content-Type`` on purpose:
webhook senders (and ``curl -d``) often label JSON as a form (docs/api.md "Triggers").
"""

from __future__ import annotations

from typing import Any, Final

from litestar import Request, Response
from litestar.handlers import BaseRouteHandler
from litestar.status_codes import HTTP_400_BAD_REQUEST, HTTP_415_UNSUPPORTED_MEDIA_TYPE

from flowdeck.api.errors import error_response

__all__ = ("check_body", "reads_json")

_UTF8: Final = frozenset({"utf-8", "utf8"})
_SHOWN_CHARS: Final = 40


def reads_json(handler: BaseRouteHandler) -> bool:
    """Whether the handler takes a JSON body (Litestar decodes it into its ``data`` parameter)."""
    return "data" in handler.parsed_fn_signature.parameters


def _is_json(media_type: str) -> bool:
    kind, _, subtype = media_type.strip().lower().partition("/")
    return kind == "application" and (subtype == "json" or subtype.endswith("+json"))


def _content_type_problem(request: Request[Any, Any, Any]) -> str | None:
    header = request.headers.get("content-type")
    if header is None:
        return "the request body must be JSON: send it with Content-Type: application/json"
    media_type, options = request.content_type
    if not _is_json(media_type):
        shown = header[:_SHOWN_CHARS].encode("ascii", "backslashreplace").decode("ascii")
        return f"the request body must be JSON (Content-Type: application/json), not {shown!r}"
    charset = options.get("charset")
    if charset is not None and charset.strip().lower() not in _UTF8:
        return f"JSON is UTF-8: Content-Type names the charset {charset[:_SHOWN_CHARS]!r}"
    return None


def _utf8_problem(body: bytes) -> str | None:
    try:
        body.decode("utf-8")
    except UnicodeDecodeError as exc:
        return f"the request body is not valid UTF-8: byte 0x{body[exc.start]:02x} at offset {exc.start} ({exc.reason})"
    return None


def _has_body(request: Request[Any, Any, Any]) -> bool:
    length = request.headers.get("content-length")
    return "transfer-encoding" in request.headers or (length is not None and length.strip() not in ("", "0"))


async def check_body(request: Request[Any, Any, Any]) -> Response[dict[str, Any]] | None:
    """``None`` when the body may go on to the handler, else the 4xx answer."""
    if not _has_body(request):
        return None
    body = await request.body()  # cached on the request: the handler reads it again for free
    if not body.strip():
        return None
    if reads_json(request.route_handler):
        problem = _content_type_problem(request)
        if problem is not None:
            return error_response(HTTP_415_UNSUPPORTED_MEDIA_TYPE, problem)
    problem = _utf8_problem(body)
    if problem is not None:
        extra = [{"code": "invalid_encoding", "message": problem, "path": "body"}]
        return error_response(HTTP_400_BAD_REQUEST, problem, extra)
    return None
