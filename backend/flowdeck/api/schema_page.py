"""``/schema``: the OpenAPI document's browsable page, with every asset served from the package (works offline).

The viewer is Swagger UI (the npm package ``swagger-ui-dist``, Apache-2.0, pinned in frontend/package.json),
copied into ``openapi_viewer/`` at build time by ``make openapi-viewer`` (see its README). Litestar's render
plugin takes local URLs for its script and style; the plugin adds the route that serves them under the schema
path.
"""

from __future__ import annotations

from pathlib import Path
from typing import Final

from litestar import Router
from litestar.openapi.plugins import SwaggerRenderPlugin
from litestar.static_files import create_static_files_router

from flowdeck.api.auth import PUBLIC

__all__ = ("VIEWER_DIR", "LocalSwaggerRenderPlugin")

VIEWER_DIR: Final = Path(__file__).parent / "openapi_viewer"
_ASSETS: Final = "/assets"


class LocalSwaggerRenderPlugin(SwaggerRenderPlugin):
    """Swagger UI from files of the package, at ``<schema path><path>``."""

    def __init__(self, schema_path: str, path: str | list[str] = "/") -> None:
        base = f"{schema_path.rstrip('/')}{_ASSETS}"
        super().__init__(
            js_url=f"{base}/swagger-ui-bundle.js",
            css_url=f"{base}/swagger-ui.css",
            standalone_preset_js_url=f"{base}/swagger-ui-standalone-preset.js",
            path=path,
            favicon=f"<link rel='icon' type='image/png' href='{base}/favicon-32x32.png'>",
        )

    def receive_router(self, router: Router) -> None:
        router.register(
            create_static_files_router(
                path=_ASSETS, directories=[VIEWER_DIR], opt={PUBLIC: True}, include_in_schema=False
            )
        )
