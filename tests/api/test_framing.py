"""Clickjacking: no other site may frame the app's pages; the embed page keeps its widget's own setting."""

from __future__ import annotations

import httpx
import pytest

from flowdeck.api.frame_headers import APP_FRAME_POLICY
from tests.api.conftest import Account, Server
from tests.support.graphs import linear

pytestmark = pytest.mark.asyncio(loop_scope="module")


def refuses_framing(response: httpx.Response) -> bool:
    return (
        response.headers.get("x-frame-options") == "DENY"
        and response.headers.get("content-security-policy") == APP_FRAME_POLICY
    )


async def test_every_page_and_answer_of_the_app_refuses_other_sites_frames(
    server: Server, alice: Account, anonymous: httpx.AsyncClient
) -> None:
    assert APP_FRAME_POLICY == "frame-ancestors 'self'"
    workflow_id = (await alice.client.post("/api/workflows", json=linear(1))).json()["id"]
    for client, path in (
        (anonymous, "/"),  # the editor (or its placeholder page before a build)
        (anonymous, "/login"),
        (anonymous, f"/workflows/{workflow_id}"),
        (anonymous, "/schema"),
        (anonymous, "/schema/swagger"),
        (anonymous, "/api/auth/me"),  # 401
        (anonymous, "/api/nothing-here"),  # 404
        (alice.client, f"/api/workflows/{workflow_id}"),
        (alice.client, "/api/workflows/validate"),  # 405 for a GET
    ):
        response = await client.get(path)
        assert refuses_framing(response), (path, response.status_code, dict(response.headers))
    posted = await alice.client.post("/api/workflows", content=b"x", headers={"Content-Type": "text/plain"})
    assert posted.status_code == 415 and refuses_framing(posted)


async def test_the_embed_page_is_framed_as_its_widget_says_and_its_data_is_not_framable(
    alice: Account, anonymous: httpx.AsyncClient
) -> None:
    workflow_id = (await alice.client.post("/api/workflows", json=linear(1))).json()["id"]
    widget = {
        "workflowId": workflow_id,
        "name": "w",
        "type": "json",
        "config": {},
        "frameAncestors": ["https://intranet.test"],
    }
    widget_id = (await alice.client.post("/api/widgets", json=widget)).json()["id"]
    token = (await alice.client.post(f"/api/widgets/{widget_id}/embed-tokens", json={})).json()["token"]

    page = await anonymous.get(f"/embed/{token}")
    assert page.status_code == 200
    assert page.headers["content-security-policy"].endswith("frame-ancestors https://intranet.test")
    assert "x-frame-options" not in page.headers
    assert refuses_framing(await anonymous.get(f"/embed/{token}/data"))
