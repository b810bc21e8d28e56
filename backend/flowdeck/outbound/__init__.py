"""Every outgoing request Flowdeck makes for a user goes through here (SPEC §6, issue 11).

``OutboundPolicy`` says which addresses a user may reach: never loopback, link-local, private,
unique-local, multicast, unspecified or otherwise non-public addresses (in any spelling: decimal,
octal, IPv4-mapped ...), never well-known metadata host names, unless an operator lists the host or
its network in ``FLOWDECK_HTTP_ALLOW``. ``guarded_transport`` is an httpx transport that resolves a
host once, checks every address, and connects to the address it checked (so DNS rebinding cannot
swap it), keeping the host name for TLS (SNI, certificate) and the ``Host`` header. Every connection
is checked, so a redirect that a client follows is checked again. A refusal raises
``AddressRefusedError``.

``parse_url`` is the one reading of a URL a user types (``flowdeck.outbound.urls``): what cannot be
read, or is refused by the policy, is a ``URLRefusedError`` the caller reports with the field's name.

Use: ``httpx.AsyncClient(transport=guarded_transport(policy), trust_env=False)``.
"""

from __future__ import annotations

from flowdeck.outbound.addresses import AddressRefusedError, OutboundPolicy
from flowdeck.outbound.transport import guarded_transport
from flowdeck.outbound.urls import URLRefusedError, join_path, parse_url

__all__ = ("AddressRefusedError", "OutboundPolicy", "URLRefusedError", "guarded_transport", "join_path", "parse_url")
