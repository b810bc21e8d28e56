"""An error no handler knows is answered without a word about it, and logged with its traceback for the
operator (the chaos suite saw a bare 500 that left no line in serve's log)."""

from __future__ import annotations

import logging

import pytest
from litestar import Litestar, get
from litestar.exceptions import NotFoundException
from litestar.testing import TestClient

from flowdeck.api.errors import EXCEPTION_HANDLERS


@get("/boom")
async def boom() -> None:
    raise RuntimeError("the secret detail of a bug")


@get("/missing")
async def missing() -> None:
    raise NotFoundException(detail="run r1 not found")


def _client() -> TestClient[Litestar]:
    app = Litestar(route_handlers=[boom, missing], exception_handlers=EXCEPTION_HANDLERS, logging_config=None)
    return TestClient(app)


def test_an_unexpected_error_is_a_bare_500_and_a_logged_traceback(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.ERROR, logger="flowdeck.api.errors"), _client() as client:
        answer = client.get("/boom")
    assert answer.status_code == 500
    assert answer.json() == {"status_code": 500, "detail": "Internal Server Error"}
    [record] = [r for r in caplog.records if r.name == "flowdeck.api.errors"]
    assert "GET /boom" in record.getMessage()
    assert record.exc_info is not None and "the secret detail of a bug" in str(record.exc_info[1])


def test_errors_that_have_a_status_keep_it() -> None:
    with _client() as client:
        answer = client.get("/missing")
    assert answer.status_code == 404 and answer.json()["detail"] == "run r1 not found"
