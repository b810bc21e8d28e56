"""The editor: the Vite build in ``static/`` served at ``/``, with deep links answered by ``index.html``."""

from __future__ import annotations

from pathlib import Path
from typing import Final

from litestar import MediaType, Response, get
from litestar.exceptions import NotFoundException
from litestar.params import FromPath
from litestar.response import File
from litestar.static_files import create_static_files_router
from litestar.types import ControllerRouterHandler

from flowdeck.api.auth import PUBLIC

__all__ = ("spa_routes",)

_NOT_SPA: Final = frozenset({"api", "embed", "hooks", "schema", "socket.io"})
_PLACEHOLDER: Final = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Flowdeck</title></head>
<body><h1>Flowdeck is running</h1>
<p>The editor has not been built yet (it is served from <code>static/</code>).
The API is documented at <a href="/schema">/schema</a>.</p></body></html>
"""


def spa_routes(static_dir: Path) -> list[ControllerRouterHandler]:
    """Static assets plus a catch-all that answers ``index.html`` (register these last)."""
    root = static_dir.resolve()
    routes: list[ControllerRouterHandler] = []
    if (root / "assets").is_dir():
        routes.append(
            create_static_files_router(
                path="/assets", directories=[root / "assets"], opt={PUBLIC: True}, include_in_schema=False
            )
        )

    @get(["/", "/{path:path}"], opt={PUBLIC: True}, include_in_schema=False, sync_to_thread=False)
    def spa(path: FromPath[str] = "/") -> Response[str] | File:
        relative = path.lstrip("/")
        if relative.split("/", 1)[0] in _NOT_SPA:
            raise NotFoundException(detail=f"no such endpoint: /{relative}")
        if relative:
            candidate = (root / relative).resolve()
            if candidate.is_relative_to(root) and candidate.is_file():
                return File(candidate, content_disposition_type="inline")
        index = root / "index.html"
        if index.is_file():
            return File(index, content_disposition_type="inline", media_type=MediaType.HTML)
        if not relative:
            return Response(_PLACEHOLDER, media_type=MediaType.HTML)
        raise NotFoundException(detail=f"no such page: /{relative}")

    routes.append(spa)
    return routes
