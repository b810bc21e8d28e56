"""``/api/templates/preview``: what a template or a condition expression resolves to against a context.

The editor shows it under every template and expression field, against the last test run's context. It
goes through the very functions a run uses (``sandbox.templates.render`` / ``evaluate``: sandboxed Jinja2
with its time and size budget), in a worker thread so a slow template never stalls the event loop. The
body is capped at ``MAX_PREVIEW_BYTES`` and each user at ``PREVIEWS_PER_MINUTE`` (in this process).
"""

from __future__ import annotations

import time
from collections import deque
from typing import Annotated, Any, Final

import anyio.to_thread
import msgspec
from litestar import Controller, post
from litestar.exceptions import TooManyRequestsException, ValidationException
from litestar.params import JSONBody
from litestar.status_codes import HTTP_200_OK
from msgspec import Meta

from flowdeck.api.dependencies import Caller
from flowdeck.api.inputs import check_json
from flowdeck.api.openapi import SIGNED_IN, errors
from flowdeck.sandbox.templates import MAX_SOURCE_CHARS, TemplateError, evaluate, render

__all__ = ("MAX_PREVIEW_BYTES", "PREVIEWS_PER_MINUTE", "PreviewLimiter", "TemplateController")

MAX_PREVIEW_BYTES: Final = 256 * 1024
PREVIEWS_PER_MINUTE: Final = 240


class PreviewIn(msgspec.Struct, rename="camel", kw_only=True, forbid_unknown_fields=True):
    template: Annotated[str, Meta(max_length=MAX_SOURCE_CHARS)] | None = None
    expression: Annotated[str, Meta(max_length=MAX_SOURCE_CHARS)] | None = None
    context: Annotated[dict[str, Any], Meta(description="the `ctx` the source sees")] = {}
    switch_value: (
        Annotated[
            str,
            Meta(
                max_length=MAX_SOURCE_CHARS,
                description="a switch's `value` template: resolved against `context`, bound as `value` in `expression`",
            ),
        ]
        | None
    ) = None


class PreviewOut(msgspec.Struct, rename="camel"):
    value: Any


class PreviewLimiter:
    """A sliding one-minute window of previews per user (a preview is cheap, but not free)."""

    def __init__(self, per_minute: int = PREVIEWS_PER_MINUTE) -> None:
        self.per_minute = per_minute
        self._seen: dict[str, deque[float]] = {}

    def check(self, key: str, now: float | None = None) -> None:
        now = time.monotonic() if now is None else now
        window = self._seen.setdefault(key, deque())
        while window and window[0] <= now - 60:
            window.popleft()
        if len(window) >= self.per_minute:
            raise TooManyRequestsException(detail="too many previews; try again in a minute")
        window.append(now)
        if len(self._seen) > 10_000:  # forget idle users
            for idle in [k for k, w in self._seen.items() if not w or w[-1] <= now - 60]:
                del self._seen[idle]


_LIMITER: Final = PreviewLimiter()


def _resolve(data: PreviewIn) -> Any:
    if data.expression is not None:
        if data.switch_value is None:
            return evaluate(data.expression, data.context)
        value = render(data.switch_value, data.context, path="switchValue")
        return evaluate(data.expression, data.context, {"value": value})
    return render(data.template, data.context)


class TemplateController(Controller):
    path = "/api/templates"
    tags = ["templates"]
    security = SIGNED_IN

    @post("/preview", status_code=HTTP_200_OK, raises=errors(400, 413, 429), request_max_body_size=MAX_PREVIEW_BYTES)
    async def preview(self, data: JSONBody[PreviewIn], principal: Caller) -> PreviewOut:
        """Resolve ``template`` (a string with ``{{ … }}``) or ``expression`` (a condition's) against ``context``
        exactly as a run would; a template or expression that fails is a 400 whose detail says why."""
        if (data.template is None) == (data.expression is None):
            raise ValidationException(detail="give exactly one of 'template' and 'expression'")
        _LIMITER.check(f"{principal.tenant_id}:{principal.user_id}")
        check_json(context=data.context)
        try:
            value = await anyio.to_thread.run_sync(_resolve, data)
        except TemplateError as exc:
            raise ValidationException(detail=exc.message) from None
        return PreviewOut(value=value)
