"""An httpx transport that only connects to addresses the ``OutboundPolicy`` allows.

httpcore lets a connection pool take its own network backend: ours resolves the host once, checks
every address it got, then connects to one of those addresses. httpcore still starts TLS with the
host name from the URL (SNI and certificate checks are for the name) and httpx sends the name in
``Host``, so only the address lookup is ours. Since every new connection goes through the backend,
each redirect hop a client follows is checked too, and a pooled connection is always to an address
that was checked. Unix sockets are refused; proxies from the environment are never used.
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
from collections.abc import Iterable
from typing import Any

import httpcore
import httpx

from flowdeck.outbound.addresses import AddressRefusedError, IPAddress, OutboundPolicy

__all__ = ("GuardedBackend", "guarded_transport", "resolve")


async def resolve(host: str, port: int, timeout: float | None = None) -> list[IPAddress]:
    """Every address ``host`` resolves to, in the resolver's order, without duplicates."""
    loop = asyncio.get_running_loop()
    try:
        async with asyncio.timeout(timeout):
            infos = await loop.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except TimeoutError:
        raise httpcore.ConnectTimeout(f"looking up {host} timed out") from None
    except (OSError, UnicodeError, ValueError) as exc:  # gaierror, an invalid name, a NUL in it
        raise httpcore.ConnectError(f"cannot resolve {host}: {exc}") from None
    seen: dict[IPAddress, None] = {}
    for info in infos:
        seen.setdefault(ipaddress.ip_address(str(info[4][0])), None)
    return list(seen)


class GuardedBackend(httpcore.AsyncNetworkBackend):
    """Resolve, check, connect to the checked address (never a second lookup)."""

    def __init__(self, policy: OutboundPolicy, inner: httpcore.AsyncNetworkBackend | None = None) -> None:
        self.policy = policy
        self._inner = inner or httpcore.AnyIOBackend()

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        reason = self.policy.name_refusal(host)  # before any lookup: a metadata name is never even resolved
        if reason is not None:
            raise AddressRefusedError(host, reason)
        addresses = await resolve(host, port, timeout)
        self.policy.check_resolved(host, addresses)
        failure: Exception = httpcore.ConnectError(f"{host} resolves to no address")
        for ip in addresses:
            try:
                return await self._inner.connect_tcp(
                    str(ip), port, timeout=timeout, local_address=local_address, socket_options=socket_options
                )
            except (httpcore.ConnectError, httpcore.ConnectTimeout) as exc:
                failure = exc
        raise failure

    async def connect_unix_socket(
        self, path: str, timeout: float | None = None, socket_options: Iterable[Any] | None = None
    ) -> httpcore.AsyncNetworkStream:
        raise AddressRefusedError(path, "a Unix socket is never reached for a user")

    async def sleep(self, seconds: float) -> None:
        await self._inner.sleep(seconds)


class _GuardedTransport(httpx.AsyncHTTPTransport):
    def __init__(self, policy: OutboundPolicy, *, verify: Any = True, limits: httpx.Limits) -> None:
        super().__init__(verify=verify, trust_env=False, limits=limits)
        # The same pool httpx would build, with our network backend (httpx has no argument for it).
        self._pool = httpcore.AsyncConnectionPool(
            ssl_context=httpx.create_ssl_context(verify=verify, trust_env=False),
            max_connections=limits.max_connections,
            max_keepalive_connections=limits.max_keepalive_connections,
            keepalive_expiry=limits.keepalive_expiry,
            network_backend=GuardedBackend(policy),
        )


def guarded_transport(
    policy: OutboundPolicy, *, verify: Any = True, limits: httpx.Limits | None = None
) -> httpx.AsyncHTTPTransport:
    """An httpx transport for requests made on a user's behalf (``verify`` as in httpx)."""
    return _GuardedTransport(policy, verify=verify, limits=limits or httpx.Limits(max_connections=100))
