"""``/embed/{token}``: the public embed page of one widget and its data, opened by an embed token.

No session and no API token: the token in the path is the whole authority, and it reads one widget.
An unknown token is a 404, a revoked or expired one a 410 (a small HTML page, or JSON for the data), never data.
"""

from __future__ import annotations

import html
import re
from pathlib import Path
from typing import Any, Final

from litestar import Controller, MediaType, Request, Response, get
from litestar.datastructures import State
from litestar.params import FromPath

from flowdeck.api.auth import PUBLIC
from flowdeck.api.dependencies import AppServices
from flowdeck.api.errors import error_response
from flowdeck.api.routes.widgets import query_of
from flowdeck.api.widget_schemas import WidgetDataOut
from flowdeck.storage.widgets import EmbedAccess, WidgetRecord
from flowdeck.widgets.frames import embed_csp

__all__ = ("EmbedController",)

_GONE: Final = 410
_MISSING_PAGE: Final = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>Flowdeck widget</title>
<style>
  html, body {{ height: 100%; margin: 0; }}
  body {{ display: flex; align-items: center; justify-content: center; background: #f8fafc;
    font: 14px/1.5 system-ui, -apple-system, "Segoe UI", sans-serif; color: #475569; }}
  p {{ margin: 0; padding: 12px 16px; border: 1px solid #e2e8f0; border-radius: 8px; background: #fff; }}
</style></head>
<body><p>{message}</p></body></html>
"""
_MESSAGES: Final = {
    "unknown": (404, "This widget link is unknown."),
    "revoked": (_GONE, "This widget link was revoked."),
    "expired": (_GONE, "This widget link has expired."),
}
_NOT_BUILT: Final = _MISSING_PAGE.format(
    message="The embed page was not built (frontend: npm run build writes static/embed.html)."
)


def _headers(widget: WidgetRecord | None) -> dict[str, str]:
    return {
        "Content-Security-Policy": embed_csp(None if widget is None else widget.frame_ancestors),
        "Referrer-Policy": "no-referrer",
        "Cache-Control": "no-store",
    }


_TITLE: Final = re.compile(r"<title>[^<]*</title>", re.IGNORECASE)


def _titled(page: str, widget: WidgetRecord) -> str:
    """The built page with the widget's name as its title (the browser tab, screen readers, the page heading)."""
    title = f"<title>{html.escape(widget.name)}</title>"
    return _TITLE.sub(lambda _: title, page, count=1)


def _built(page: Path) -> bool:
    # A stat of a local file, like the editor's catch-all does on the event loop: the build may appear later.
    return page.is_file()


def _text(page: Path) -> str:
    # A read of under 1 kB per page view (the build may change under a running serve), like _built's stat.
    return page.read_text(encoding="utf-8")


def _refusal_page(access: EmbedAccess) -> Response[str]:
    status, message = _MESSAGES[access.state]
    return Response(
        _MISSING_PAGE.format(message=message), status_code=status, media_type=MediaType.HTML, headers=_headers(None)
    )


def _refusal(access: EmbedAccess) -> Response[dict[str, Any]]:
    status, message = _MESSAGES[access.state]
    return error_response(status, message, headers={"Cache-Control": "no-store"})


class EmbedController(Controller):
    path = "/embed"
    include_in_schema = False

    @get("/{token:str}", opt={PUBLIC: True}, media_type=MediaType.HTML)
    async def embed_page(self, token: FromPath[str], services: AppServices, state: State) -> Response[str]:
        """The embed page (the Vite entry ``embed.html``), framable by the widget's ``frameAncestors``."""
        access = await services.widgets.open_embed(token)
        if access.widget is None:
            return _refusal_page(access)
        page: Path = state.embed_page
        headers = _headers(access.widget)
        if _built(page):
            return Response(_titled(_text(page), access.widget), media_type=MediaType.HTML, headers=headers)
        return Response(_NOT_BUILT, media_type=MediaType.HTML, headers=headers)

    @get("/{token:str}/data", opt={PUBLIC: True})
    async def embed_data(
        self, token: FromPath[str], request: Request[Any, Any, Any], services: AppServices
    ) -> Response[Any]:
        """The widget's data answer; query parameters feed a sync widget's run (``runsPerMinute`` per link: 429)."""
        access = await services.widgets.open_embed(token)
        if access.widget is None:
            return _refusal(access)
        admit = services.embed_limits.admit(access.token_id or "")  # a sync run counts against the link's budget
        answer: WidgetDataOut = await services.widget_data.of_widget(
            access.widget, query_of(request), admit, public=True
        )
        return Response(answer, headers={"Cache-Control": "no-store"})

    @get("/{token:str}/runs/{run_id:str}", opt={PUBLIC: True})
    async def embed_run(self, token: FromPath[str], run_id: FromPath[str], services: AppServices) -> Response[Any]:
        """A run of the widget's workflow, processed for the widget: its data only (no run input, no node outputs)."""
        access = await services.widgets.open_embed(token)
        if access.widget is None:
            return _refusal(access)
        answer = await services.widget_data.of_widget_run(access.widget, run_id, public=True)
        return Response(answer, headers={"Cache-Control": "no-store"})
