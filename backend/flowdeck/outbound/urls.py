"""The one reading of a URL a user types: a data source's ``baseUrl``, a saved query's path on it,
``options.onFailure.url`` / ``options.onSlaBreach.url``, the notification test button's URL.

``parse_url`` reads the text the way the HTTP client that sends the request reads it (httpx), so a
URL accepted here is exactly the one that is requested; anything httpx cannot read, or that is
ambiguous between readers, is refused with a reason (``URLRefusedError``), never a crash:

- a string of at most ``MAX_URL_CHARS`` characters without spaces, control characters or
  backslashes (``http://127.0.0.1\\@good.com/`` is one host to a browser, another to httpx);
- ``http`` or ``https``, a host, no ``user:password@`` (``http://good.com@127.0.0.1/`` goes to
  127.0.0.1) and no ``#fragment`` (never sent; ``http://127.0.0.1#@good.com/`` is a trick);
- the host is an address or a host name of letters, digits, ``-`` and ``_`` (a name in another
  script is converted by IDNA; invalid IDNA such as ``xn--`` or ``xn--localhost`` is refused);
  ``0177.0.0.1`` and ``127.000.000.001`` are no IPv4 address to httpx and are refused as such;
- a port, if given, from 1 to 65535;
- with a ``policy``: the host passes ``OutboundPolicy.name_refusal`` (any spelling of an internal
  address, ``localhost``, metadata names). A name that only resolves to a refused address is
  caught when the request connects (``flowdeck.outbound.transport``).

The caller names the field the URL came from; the reason never does.
"""

from __future__ import annotations

import ipaddress
import re
from typing import Final

import httpx

from flowdeck.outbound.addresses import HOST_NAME, OutboundPolicy

__all__ = ("MAX_URL_CHARS", "URLRefusedError", "join_path", "parse_url")

MAX_URL_CHARS: Final = 2000
_SCHEMES: Final = ("http", "https")
_UNSAFE: Final = re.compile(r"[\x00-\x20\x7f\\]")


class URLRefusedError(ValueError):
    """A URL Flowdeck will not request; the message says why and reads after a subject the caller adds
    (``f"baseUrl {exc}"``: "baseUrl has port 99999, outside 1-65535")."""


def _check_host(host: str) -> None:
    if not host:
        raise URLRefusedError("must name a host (http://host/...)")
    if "%" in host:  # a percent-encoded name, or an IPv6 zone (fe80::1%25eth0)
        raise URLRefusedError(f"has a host that is no valid host name or address: {host!r}")
    try:
        ipaddress.ip_address(host)
    except ValueError:
        if not HOST_NAME.fullmatch(host.rstrip(".").lower()):
            raise URLRefusedError(f"has a host that is no valid host name or address: {host!r}") from None


def parse_url(text: object, policy: OutboundPolicy | None = None) -> httpx.URL:
    """The URL ``text`` stands for, as it will be requested; ``URLRefusedError`` says why not.

    Without ``policy`` only the form is checked (what validation without the operator's settings
    can tell); with it, the host must also be one a user may reach.
    """
    if not isinstance(text, str) or not text:
        raise URLRefusedError("must be an http:// or https:// URL")
    if len(text) > MAX_URL_CHARS:
        raise URLRefusedError(f"is longer than {MAX_URL_CHARS} characters")
    if _UNSAFE.search(text):
        raise URLRefusedError("must not contain spaces, control characters or backslashes (percent-encode them)")
    try:
        url = httpx.URL(text)
        host = url.raw_host.decode("ascii")
    except (httpx.InvalidURL, UnicodeError, ValueError) as exc:  # idna's errors are UnicodeErrors
        raise URLRefusedError(f"cannot be read: {exc}") from None
    try:
        url.host  # noqa: B018 - decodes the IDNA labels: an invalid one (xn--, xn--localhost) raises
    except (httpx.InvalidURL, UnicodeError, ValueError) as exc:
        raise URLRefusedError(f"has a host that is no valid internationalised (IDNA) name: {host!r} ({exc})") from None
    if url.scheme not in _SCHEMES:
        raise URLRefusedError("must be an http:// or https:// URL")
    if url.userinfo:
        raise URLRefusedError("must not contain a user name or password (send credentials in headers)")
    if url.fragment or "#" in text:
        raise URLRefusedError("must not contain a #fragment")
    _check_host(host)
    if url.port is not None and not 1 <= url.port <= 65535:
        raise URLRefusedError(f"has port {url.port}, outside 1-65535")
    if policy is not None:
        reason = policy.name_refusal(host)
        if reason is not None:
            raise URLRefusedError(f"is refused: {reason} (an operator can allow it with FLOWDECK_HTTP_ALLOW)")
    return url


def join_path(base: str, path: str) -> str:
    """A saved query's ``path`` on its data source's ``baseUrl`` (one ``/`` between them)."""
    return base.rstrip("/") + ("/" + path.lstrip("/") if path else "")
