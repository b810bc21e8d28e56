"""The pool under uvloop, which uvicorn uses: it makes watched fds non-blocking, large messages included."""

from __future__ import annotations

import asyncio

import pytest

from flowdeck.sandbox.messages import SandboxTimeoutError
from flowdeck.sandbox.pool import SandboxPool

uvloop = pytest.importorskip("uvloop")


async def scenario() -> None:
    async with SandboxPool(1) as pool:
        big = await pool.run("return len(ctx['blob'])", {"blob": "y" * 300_000}, timeout_seconds=5)
        assert big.output == 300_000
        reply = await pool.run("return 'z' * 5_000_000", {}, timeout_seconds=5)
        assert len(reply.output) == 5_000_000
        with pytest.raises(SandboxTimeoutError):
            await pool.run("while True:\n    pass", {}, timeout_seconds=0.3)
        results = await asyncio.gather(*(pool.run("return ctx['n']", {"n": n}, timeout_seconds=5) for n in range(4)))
        assert [result.output for result in results] == [0, 1, 2, 3]


def test_pool_under_uvloop() -> None:
    uvloop.run(scenario())
