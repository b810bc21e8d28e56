"""``flowdeck run FILE``: validate a workflow file, run it as a test run and show each node live."""

from __future__ import annotations

import asyncio
import json
import sys
import time
from pathlib import Path
from typing import Any

from flowdeck.domain.problems import Problem, has_errors
from flowdeck.domain.statuses import TERMINAL_RUN_STATUSES
from flowdeck.engine.publisher import NodeUpdate, RunUpdate
from flowdeck.runtime import open_runtime
from flowdeck.settings import Settings

__all__ = ("run_file",)


def _print_problems(problems: list[Problem]) -> None:
    for p in problems:
        where = " ".join(
            x for x in (f"node {p.node_id}" if p.node_id else "", f"edge {p.edge_id}" if p.edge_id else "") if x
        )
        print(f"  {p.severity:7} {p.code:24} {where + ': ' if where else ''}{p.message}", file=sys.stderr)


def _describe(update: NodeUpdate, started: float) -> str:
    at = f"{(update.at - started) * 1000:8.1f} ms"
    node = update.node_id + (f"[{update.iteration}]" if update.iteration else "")
    detail = ""
    if update.error:
        detail = f"  {update.error}"
    elif update.output is not None and update.status.value == "COMPLETED":
        text = json.dumps(update.output, default=str)
        detail = f"  -> {text if len(text) < 100 else text[:97] + '...'}"
    attempt = f" (attempt {update.attempt})" if update.attempt > 1 else ""
    return f"{at}  {node:24} {update.status.value:10}{attempt}{detail}"


async def run_file(settings: Settings, path: Path, run_input: Any, *, timeout: float) -> int:
    try:
        text = await asyncio.to_thread(path.read_text, encoding="utf-8")
        definition = json.loads(text)
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        print(f"cannot read {path}: {exc}", file=sys.stderr)
        return 2
    async with open_runtime(settings, migrate=settings.is_sqlite, with_scheduler=False) as runtime:
        engine = runtime.engine
        problems = engine.validate(definition, raw_size=len(text.encode()))
        if problems:
            print(f"{path}: {len(problems)} problem(s)", file=sys.stderr)
            _print_problems(problems)
        if has_errors(problems):
            return 2
        tenant_id = await engine.tenants.ensure("default")
        await engine.publisher.watches.watch(None)  # nodes other processes run are shown too
        with engine.publisher.subscribe() as updates:
            started = time.time()
            instance_id = await engine.start_test_run(tenant_id, definition, run_input)
            print(f"run {instance_id}")
            deadline = time.monotonic() + timeout
            while (remaining := deadline - time.monotonic()) > 0:
                try:
                    update = await asyncio.wait_for(updates.get(), timeout=remaining)
                except TimeoutError:
                    break
                if update.instance_id != instance_id:
                    continue
                if isinstance(update, NodeUpdate):
                    print(_describe(update, started), flush=True)
                elif isinstance(update, RunUpdate) and update.status in TERMINAL_RUN_STATUSES:
                    break
        run = await engine.state.get_instance(instance_id)
        assert run is not None
        print(f"run {run.status.value} in {((run.completed_at or time.time()) - started) * 1000:.1f} ms")
        if run.error:
            print(f"error: {run.error}", file=sys.stderr)
        if run.output is not None:
            print(json.dumps(run.output, indent=2, default=str))
        return 0 if run.status.value == "COMPLETED" else 1
