"""A worker process with the test node types: ``python -m tests.support.step_worker`` (like ``flowdeck worker``,
with the same signals: the first SIGTERM/SIGINT drains for FLOWDECK_SHUTDOWN_GRACE seconds, a second hurries)."""

from __future__ import annotations

import argparse
import asyncio

from flowdeck.engine.engine import Engine
from flowdeck.lifecycle import StopSignals
from flowdeck.settings import Settings
from flowdeck.storage.database import Database
from tests.support.handlers import make_test_registry


async def main(lease_seconds: float) -> None:
    settings = Settings.from_env()
    db = Database(settings.database_url)
    engine = Engine(
        db,
        make_test_registry(),
        lease_seconds=lease_seconds,
        poll_interval=0.05,
        concurrency=settings.worker_concurrency,
    )
    signals = StopSignals()
    signals.on_second.append(engine.worker.hurry)
    await engine.start()
    print(f"worker {engine.worker.id} running", flush=True)
    await signals.first()
    print("stopping", flush=True)
    await engine.stop(grace=settings.shutdown_grace)
    print("stopped", flush=True)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--lease-seconds", type=float, default=30)
    asyncio.run(main(parser.parse_args().lease_seconds))
