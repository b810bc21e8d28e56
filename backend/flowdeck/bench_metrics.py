"""What the benchmarks read from the processes they start: free ports for their metrics listeners, and the
counters those listeners serve, summed over the processes (prometheus-client's own text parser)."""

from __future__ import annotations

import contextlib
import socket
from collections.abc import Sequence

import httpx
from prometheus_client.parser import text_string_to_metric_families

__all__ = ("free_port", "free_ports", "scrape_totals")


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def free_ports(count: int) -> int:
    """The first of ``count`` free ports in a row (serve's metrics listener, then its worker processes')."""
    for _ in range(100):
        first = free_port()
        with contextlib.ExitStack() as probes:
            try:
                for port in range(first + 1, first + count):
                    probes.enter_context(socket.socket()).bind(("127.0.0.1", port))
            except OSError:
                continue
        return first
    raise RuntimeError(f"no {count} free ports in a row on 127.0.0.1")


async def scrape_totals(urls: Sequence[str], prefixes: tuple[str, ...]) -> dict[str, float] | None:
    """Every sample whose family name starts with one of ``prefixes``, by sample name, summed over the
    listeners at ``urls`` and over labels (``None``: one did not answer, its metrics being off)."""
    totals: dict[str, float] = {}
    async with httpx.AsyncClient(timeout=10) as client:
        for url in urls:
            try:
                answer = await client.get(url)
            except httpx.TransportError:
                return None
            if answer.status_code != 200:
                return None
            for family in text_string_to_metric_families(answer.text):
                if family.name.startswith(prefixes):
                    for sample in family.samples:
                        totals[sample.name] = totals.get(sample.name, 0.0) + sample.value
    return totals
