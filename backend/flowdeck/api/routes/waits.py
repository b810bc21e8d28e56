"""Resuming ``wait`` nodes (docs/waits.md): ``POST /resume/{token}``, and the form page ``/forms/{token}``.

No session and no API token: the token in the path is the whole authority (256 random bits; only its
hash is stored), and it resumes one node of one run once. An unknown token, one whose run was cancelled
or failed, and one past its timeout are a 404; a token already used is a 409.
"""

from __future__ import annotations

import time
from typing import Any, Final
from urllib.parse import parse_qsl

import msgspec
from litestar import Controller, MediaType, Request, Response, get, post
from litestar.exceptions import HTTPException, NotFoundException, ValidationException
from litestar.params import FromPath
from litestar.status_codes import HTTP_202_ACCEPTED, HTTP_409_CONFLICT

from flowdeck.api.auth import PUBLIC
from flowdeck.api.dependencies import AppServices
from flowdeck.api.inputs import check_json
from flowdeck.api.openapi import errors
from flowdeck.api.routes.wait_page import form_page, message_page
from flowdeck.api.schemas import ResumedOut
from flowdeck.domain.wait_forms import FormError, FormField, parse_fields, typed_values
from flowdeck.storage.waits import ResumeAnswer, TokenInfo

__all__ = ("FormController", "ResumeController")

_UNKNOWN: Final = "this link is unknown, has expired, or its run has ended"
_USED: Final = "this wait was resumed already"
_FORM_TYPE: Final = "application/x-www-form-urlencoded"
PAGE_HEADERS: Final = {
    # Like the embed page, an answer that sets its own policy: nothing may frame it, no script runs,
    # the form posts only back here, and the token in the URL never leaves in a Referer.
    "Content-Security-Policy": (
        "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
    ),
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
}


def _json_body(raw: bytes) -> Any:
    if not raw.strip():
        return None
    try:
        value = msgspec.json.decode(raw)
    except msgspec.DecodeError as exc:
        raise ValidationException(detail=f"the request body is not JSON: {exc}", extra=[{"key": "body"}]) from exc
    check_json(body=value)
    return value


def _answer(answer: ResumeAnswer, info: TokenInfo | None) -> ResumedOut:
    if answer == "unknown" or info is None:
        raise NotFoundException(detail=_UNKNOWN)
    if answer == "used":
        raise HTTPException(status_code=HTTP_409_CONFLICT, detail=_USED)
    return ResumedOut(instance_id=info.instance_id, node_id=info.node_id)


class ResumeController(Controller):
    path = "/resume"
    tags = ["waits"]
    security = []

    @post("/{token:str}", opt={PUBLIC: True}, status_code=HTTP_202_ACCEPTED, raises=errors(400, 404, 409, 413))
    async def resume(self, token: FromPath[str], request: Request[Any, Any, Any], services: AppServices) -> ResumedOut:
        """Resume the ``wait`` node (``resumeOn: "webhook"``) of this token with the JSON body: the node's
        output is ``{body, receivedAt}``. 202 ``{instanceId, nodeId}``; 409 when it was resumed already;
        404 for an unknown token, or one whose run ended or whose timeout passed."""
        waits = services.engine.waits
        info = await waits.lookup(token)
        if info is None or info.resume_on != "webhook":
            raise NotFoundException(detail=_UNKNOWN)
        body = _json_body(await request.body())
        answer, resumed = await services.engine.resume_wait(token, {"body": body, "receivedAt": time.time()})
        return _answer(answer, resumed)


class FormController(Controller):
    path = "/forms"
    include_in_schema = False

    async def _form(self, token: str, services: AppServices) -> tuple[TokenInfo, str, list[FormField]] | None:
        info = await services.engine.waits.lookup(token)
        if info is None or info.resume_on != "form":
            return None
        node = (await services.engine.plans.get(info.instance_id)).graph.node(info.node_id)
        return info, node.label or node.id, parse_fields(node.config.get("fields"))

    @get("/{token:str}", opt={PUBLIC: True}, media_type=MediaType.HTML)
    async def form(self, token: FromPath[str], services: AppServices) -> Response[str]:
        """The form page of a ``wait`` node (``resumeOn: "form"``): a plain HTML form that posts back here."""
        found = await self._form(token, services)
        if found is None or not found[0].usable:
            used = found is not None and await services.engine.waits.was_used(token)
            status, text = (HTTP_409_CONFLICT, "This form was submitted already.") if used else (404, _UNKNOWN)
            return Response(message_page(text.capitalize()), status_code=status, headers=PAGE_HEADERS)
        info, label, fields = found
        return Response(form_page(info.tenant_name, label, fields), headers=PAGE_HEADERS)

    @post("/{token:str}", opt={PUBLIC: True}, status_code=HTTP_202_ACCEPTED)
    async def submit(
        self, token: FromPath[str], request: Request[Any, Any, Any], services: AppServices
    ) -> Response[Any]:
        """Submit the form as JSON (``{name: value}``) or as an HTML form post; the node's output is the
        values, typed. 400 names a missing or mistyped field; 409 for a second submission."""
        found = await self._form(token, services)
        if found is None:
            raise NotFoundException(detail=_UNKNOWN)
        _, label, fields = found
        raw = await request.body()
        from_html = (request.headers.get("content-type") or "").split(";")[0].strip().lower() == _FORM_TYPE
        values = dict(parse_qsl(raw.decode(), keep_blank_values=True)) if from_html else _json_body(raw) or {}
        if not isinstance(values, dict):
            raise ValidationException(detail="the body must be an object of field names to values")
        try:
            output = typed_values(fields, values, from_html=from_html)
        except FormError as exc:
            raise ValidationException(detail=exc.message, extra=[{"key": f"fields.{exc.field}"}]) from exc
        answer, info = await services.engine.resume_wait(token, output)
        if from_html and answer != "unknown":
            text = "Thank you: your answer was sent." if answer == "resumed" else "This form was submitted already."
            return Response(
                message_page(text, title=label),
                status_code=HTTP_202_ACCEPTED if answer == "resumed" else HTTP_409_CONFLICT,
                media_type=MediaType.HTML,
                headers=PAGE_HEADERS,
            )
        return Response(_answer(answer, info), status_code=HTTP_202_ACCEPTED)
