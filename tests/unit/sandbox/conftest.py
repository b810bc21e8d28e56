"""Real sandbox worker processes for the sandbox tests: one pool per test module, fresh ones on demand."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest_asyncio

from flowdeck.sandbox.pool import SandboxPool


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def pool() -> AsyncIterator[SandboxPool]:
    async with SandboxPool(2) as shared:
        yield shared


@pytest_asyncio.fixture(loop_scope="module")
async def solo_pool() -> AsyncIterator[SandboxPool]:
    """One worker, so consecutive calls are known to share a process."""
    async with SandboxPool(1) as solo:
        yield solo
