"""Which addresses and host names a user's request may reach (stdlib ``ipaddress`` classifies them).

An address is refused unless it is a public unicast address: loopback, link-local (169.254/16 and
fe80::/10, where cloud metadata services live), private (RFC 1918), shared (100.64/10, used by some
metadata services), unique-local (fc00::/7), multicast, unspecified, reserved and documentation
ranges are all refused. IPv6 forms that carry an IPv4 address (IPv4-mapped ``::ffff:a.b.c.d``,
6to4, Teredo, NAT64 ``64:ff9b::/96``) are judged by that IPv4 address. Host names are judged by
what they resolve to; a few names are refused by name as well (``localhost``, cloud metadata names),
so a data source naming them is refused when it is saved.

``FLOWDECK_HTTP_ALLOW`` (comma-separated) lists host names, addresses and CIDR networks an operator
lets users reach anyway: a listed host name may resolve to anything, a listed network admits the
addresses inside it.
"""

from __future__ import annotations

import ipaddress
import re
import socket
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Final

__all__ = ("HOST_NAME", "METADATA_HOSTS", "AddressRefusedError", "IPAddress", "OutboundPolicy", "address_refusal")

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
_Network = ipaddress.IPv4Network | ipaddress.IPv6Network

METADATA_HOSTS: Final = frozenset(
    {
        "metadata",
        "metadata.google.internal",
        "metadata.goog",
        "metadata.azure.internal",
        "instance-data",
        "instance-data.ec2.internal",
        "metadata.tencentyun.com",
        "metadata.platformequinix.com",
    }
)
_SHARED: Final = ipaddress.ip_network("100.64.0.0/10")
_UNIQUE_LOCAL: Final = ipaddress.ip_network("fc00::/7")
_NAT64: Final = ipaddress.ip_network("64:ff9b::/96")
# A host name as DNS and the resolver take it (``_`` too: some internal names have one).
HOST_NAME: Final = re.compile(r"(?=.{1,253}$)[a-z0-9_]([a-z0-9_-]{0,62})(\.[a-z0-9_]([a-z0-9_-]{0,62}))*")


class AddressRefusedError(Exception):
    """A user's request would reach an address (or host name) that is not allowed."""

    def __init__(self, host: str, reason: str) -> None:
        super().__init__(f"{host} is refused: {reason} (an operator can allow it with FLOWDECK_HTTP_ALLOW)")
        self.host = host
        self.reason = reason


def _embedded_ipv4(ip: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    if ip.ipv4_mapped is not None:
        return ip.ipv4_mapped
    if ip.sixtofour is not None:
        return ip.sixtofour
    if ip.teredo is not None:
        return ip.teredo[1]
    if ip in _NAT64:
        return ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
    return None


def address_refusal(ip: IPAddress) -> str | None:
    """Why ``ip`` must not be reached by a user's request, or ``None`` for a public unicast address."""
    if isinstance(ip, ipaddress.IPv6Address):
        inner = _embedded_ipv4(ip)
        if inner is not None:
            reason = address_refusal(inner)
            return None if reason is None else f"{reason} (carried in the IPv6 address {ip})"
        if ip.scope_id:
            return "a link-local (scoped) address"
    checks: list[tuple[bool, str]] = [
        (ip.is_unspecified, "an unspecified address"),
        (ip.is_loopback, "a loopback address"),
        (ip.is_link_local, "a link-local address (cloud metadata lives there)"),
        (ip.is_multicast, "a multicast address"),
        (isinstance(ip, ipaddress.IPv6Address) and ip in _UNIQUE_LOCAL, "a unique-local address"),
        (isinstance(ip, ipaddress.IPv4Address) and ip in _SHARED, "a shared (carrier-grade NAT) address"),
        (ip.is_private, "a private address"),
        (ip.is_reserved, "a reserved address"),
        (not ip.is_global, "not a public address"),
    ]
    return next((f"{ip} is {reason}" for hit, reason in checks if hit), None)


def numeric_host(host: str) -> IPAddress | None:
    """The address a host that is written as an address stands for, in any spelling the resolver accepts.

    ``2130706433``, ``0177.0.0.1``, ``0x7f.1``, ``127.1``, ``0`` and ``[::ffff:127.0.0.1]`` are all
    addresses; the system resolver is asked with ``AI_NUMERICHOST`` (no DNS), so what is recognised
    here is exactly what a connection would use.
    """
    bare = host.strip("[]")
    try:
        return ipaddress.ip_address(bare)
    except ValueError:
        pass
    try:
        infos = socket.getaddrinfo(bare, None, type=socket.SOCK_STREAM, flags=socket.AI_NUMERICHOST)
    except (socket.gaierror, UnicodeError, ValueError):
        return None
    return ipaddress.ip_address(str(infos[0][4][0]).split("%", 1)[0]) if infos else None


def _normal_name(host: str) -> str:
    return host.strip().strip("[]").rstrip(".").lower()


@dataclass(frozen=True, slots=True)
class OutboundPolicy:
    """The operator's exceptions (``FLOWDECK_HTTP_ALLOW``); everything else follows the rules above."""

    hosts: frozenset[str] = frozenset()
    networks: tuple[_Network, ...] = field(default=())

    @classmethod
    def from_entries(cls, entries: Iterable[str], *, setting: str = "FLOWDECK_HTTP_ALLOW") -> OutboundPolicy:
        """Parse host names, addresses and CIDRs; ``ValueError`` names ``setting`` and the bad entry."""
        hosts: set[str] = set()
        networks: list[_Network] = []
        for raw in entries:
            entry = raw.strip()
            if not entry:
                continue
            try:
                networks.append(ipaddress.ip_network(entry.strip("[]"), strict=False))
                continue
            except ValueError:
                pass
            name = _normal_name(entry)
            if not HOST_NAME.fullmatch(name):
                raise ValueError(f"{setting}: {entry!r} is not a host name, an address or a CIDR network")
            hosts.add(name)
        return cls(frozenset(hosts), tuple(networks))

    @classmethod
    def parse(cls, text: str | None, *, setting: str = "FLOWDECK_HTTP_ALLOW") -> OutboundPolicy:
        return cls.from_entries((text or "").split(","), setting=setting)

    def host_allowed(self, host: str) -> bool:
        return _normal_name(host) in self.hosts

    def _address_allowed(self, ip: IPAddress) -> bool:
        candidates: list[IPAddress] = [ip]
        if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
            candidates.append(ip.ipv4_mapped)
        return any(c.version == n.version and c in n for c in candidates for n in self.networks)

    def address_refusal(self, ip: IPAddress) -> str | None:
        """Why ``ip`` may not be reached (``None``: it may)."""
        return None if self._address_allowed(ip) else address_refusal(ip)

    def check_address(self, host: str, ip: IPAddress) -> None:
        if self.host_allowed(host):
            return
        reason = self.address_refusal(ip)
        if reason is not None:
            raise AddressRefusedError(host, reason)

    def name_refusal(self, host: str) -> str | None:
        """Why ``host`` is refused before any lookup: a refused literal address or a known internal name.

        What saving a data source checks; a name that resolves to a refused address is caught when
        it is used.
        """
        if self.host_allowed(host):
            return None
        name = _normal_name(host)
        ip = numeric_host(name)
        if ip is not None:
            return self.address_refusal(ip)
        if name == "localhost" or name.endswith(".localhost"):
            return f"{name} is the server itself (loopback)"
        if name in METADATA_HOSTS:
            return f"{name} is a cloud metadata service"
        return None

    def check_resolved(self, host: str, addresses: Sequence[IPAddress]) -> None:
        """Refuse ``host`` if it is refused by name or if any address it resolved to is refused."""
        reason = self.name_refusal(host)
        if reason is not None:
            raise AddressRefusedError(host, reason)
        for ip in addresses:
            self.check_address(host, ip)
