"""``parse_url``: the one reading of a URL a user types; every bad one is a reason, never a crash."""

from __future__ import annotations

import pytest

from flowdeck.outbound import OutboundPolicy, URLRefusedError, join_path, parse_url
from tests.support.addresses import INTERNAL_URLS, MALFORMED_URLS, PUBLIC_URLS

NOBODY = OutboundPolicy()


@pytest.mark.parametrize(("url", "reason"), MALFORMED_URLS.items())
def test_malformed_urls_are_refused_with_a_reason_even_without_a_policy(url: str, reason: str) -> None:
    with pytest.raises(URLRefusedError) as refused:
        parse_url(url)
    assert reason in str(refused.value), str(refused.value)


@pytest.mark.parametrize("url", INTERNAL_URLS)
def test_every_spelling_of_an_internal_host_is_refused(url: str) -> None:
    with pytest.raises(URLRefusedError) as refused:
        parse_url(url, NOBODY)
    message = str(refused.value)
    assert "is refused" in message or "cannot be read" in message, message


@pytest.mark.parametrize("url", PUBLIC_URLS)
def test_public_urls_are_read_as_httpx_will_request_them(url: str) -> None:
    parsed = parse_url(url, NOBODY)
    assert parsed.scheme in ("http", "https") and parsed.host


def test_the_operator_allow_list_admits_what_it_names_in_the_spellings_httpx_reads() -> None:
    local = OutboundPolicy.parse("127.0.0.1,intranet")
    assert parse_url("http://127.0.0.1:8000/hook", local).port == 8000
    assert parse_url("http://2130706433/", local).host == "2130706433"  # the resolver's spelling of 127.0.0.1
    assert parse_url("http://intranet/x", local).host == "intranet"
    with pytest.raises(URLRefusedError, match="cannot be read"):  # httpx could never request it
        parse_url("http://0177.0.0.1/", local)
    with pytest.raises(URLRefusedError, match="FLOWDECK_HTTP_ALLOW"):
        parse_url("http://127.0.0.2/", local)


def test_non_strings_are_refused() -> None:
    for value in (None, 5, "", ["http://example.com"], {"url": "x"}):
        with pytest.raises(URLRefusedError, match="http:// or https://"):
            parse_url(value)


def test_a_path_joins_its_base_with_one_slash() -> None:
    assert join_path("https://api.example/v1/", "/users") == "https://api.example/v1/users"
    assert join_path("https://api.example/v1", "") == "https://api.example/v1"
    assert str(parse_url(join_path("https://api.example/v1", "a%20b/é"))) == "https://api.example/v1/a%20b/%C3%A9"
