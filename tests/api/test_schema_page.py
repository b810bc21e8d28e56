"""``/schema`` works without internet: the page's scripts, style and icon all come from the server."""

from __future__ import annotations

import re

import httpx
import pytest

pytestmark = pytest.mark.asyncio(loop_scope="module")


async def test_the_schema_page_loads_every_asset_from_the_server(anonymous: httpx.AsyncClient) -> None:
    page = await anonymous.get("/schema")
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    urls = re.findall(r"""(?:src|href)=["']([^"']+)["']""", page.text)
    assert len(urls) >= 4  # the bundle, the preset, the style and the icon
    assert all(url.startswith("/schema/assets/") for url in urls), urls  # nothing from another host
    for url in urls:
        asset = await anonymous.get(url)
        assert asset.status_code == 200 and len(asset.content) > 500, url
    bundle = await anonymous.get("/schema/assets/swagger-ui-bundle.js")
    assert "javascript" in bundle.headers["content-type"] and b"SwaggerUIBundle" in bundle.content
    assert (await anonymous.get("/schema/swagger")).status_code == 200
    assert (await anonymous.get("/schema/assets/schema_page.py")).status_code == 404
