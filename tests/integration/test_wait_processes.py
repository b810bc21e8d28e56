"""``wait`` nodes through real processes (issue 23 "Tests"): a ``flowdeck serve`` with a ``flowdeck worker``
process beside it (on SQLite with Redis, which carries the worker's updates), on both databases.

Each kind (webhook, form, approval) is resumed through the HTTP API, timed out by the worker process,
cancelled (its token then refused); a resume sent at the very instant of the timeout (the API process
resuming, the worker process claiming the timeout) has exactly one winner; and every process killed
while runs wait loses nothing: a new ``serve`` resumes them and they finish.
"""

from __future__ import annotations

import asyncio
import os
import signal
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager, suppress
from dataclasses import dataclass
from typing import Any

import httpx
import pytest

from flowdeck.accounts.passwords import PasswordService
from flowdeck.accounts.rate_limit import LoginRateLimiter
from flowdeck.accounts.service import AccountsService
from flowdeck.storage.database import Database
from tests.integration.test_worker_processes import _worker_children, serve
from tests.support.graphs import definition, edge, end, node
from tests.support.waiting import until

pytestmark = pytest.mark.slow

KINDS = ("webhook", "form", "approval")
FIELDS = [
    {"name": "who", "label": "Who", "type": "string", "required": True},
    {"name": "n", "label": "N", "type": "number", "required": True},
    {"name": "ok", "label": "OK", "type": "boolean", "required": False},
    {"name": "size", "label": "Size", "type": "select", "required": True, "options": ["S", "M"]},
]
ANSWERS: dict[str, Any] = {"webhook": {"x": 1}, "form": {"who": "ann", "n": 2, "ok": True, "size": "M"}}


def waiting(kind: str, timeout: float = 600) -> dict[str, Any]:
    config: dict[str, Any] = {"resumeOn": kind, "timeoutSeconds": timeout}
    if kind == "form":
        config["fields"] = FIELDS
    return definition(
        [
            node("start", "start"),
            node("hold", "wait", config=config),
            end(params={"got": "{{ ctx.hold }}"}),
            end("late", params={"late": "{{ ctx.hold.timedOut }}"}),
        ],
        [edge("start", "hold"), edge("hold", "end", "success"), edge("hold", "late", "timeout")],
        timeoutSeconds=600,
    )


@dataclass
class Site:
    starter: httpx.AsyncClient
    approver: httpx.AsyncClient
    anonymous: httpx.AsyncClient
    tokens: tuple[str, str]
    workflows: dict[tuple[str, float], str]

    async def start(self, kind: str, timeout: float = 600) -> str:
        key = (kind, timeout)
        if key not in self.workflows:
            created = await self.starter.post("/api/workflows", json=waiting(kind, timeout))
            assert created.status_code == 201, created.text
            self.workflows[key] = created.json()["id"]
        started = await self.starter.post(f"/api/workflows/{self.workflows[key]}/runs", json={"input": {}})
        assert started.status_code == 202, started.text
        return str(started.json()["instanceId"])

    async def until(self, run_id: str, check: Callable[[dict[str, Any]], bool], seconds: float = 30) -> dict[str, Any]:
        async def run() -> dict[str, Any]:
            return dict((await self.starter.get(f"/api/runs/{run_id}")).json())

        return await until(run, check, timeout=seconds, what=f"run {run_id}")

    async def parked(self, run_id: str) -> dict[str, Any]:
        run = await self.until(run_id, lambda r: r["nodes"].get("hold", {}).get("status") == "WAITING")
        return dict(run["nodes"]["hold"]["waitingFor"])

    async def ended(self, run_id: str) -> dict[str, Any]:
        return await self.until(run_id, lambda r: r["status"] in ("COMPLETED", "FAILED", "CANCELLED"))

    async def resume(self, kind: str, shown: dict[str, Any]) -> httpx.Response:
        if kind == "approval":
            return await self.approver.post(f"/api/approvals/{shown['approvalId']}", json={"decision": "approve"})
        return await self.anonymous.post(shown["url"], json=ANSWERS[kind])


async def _tokens(database_url: str) -> tuple[str, str]:
    """Two users of one tenant (serve made the schema): who starts the runs, who approves."""
    db = Database(database_url)
    try:
        accounts = AccountsService(db, PasswordService(), LoginRateLimiter(db))
        tenant = f"acme-{time.time_ns()}"
        found = []
        for who in ("ann", "bob"):
            email = f"{who}-{time.time_ns()}@acme.test"
            await accounts.create_user(email, tenant, None)
            found.append((await accounts.create_token_for_email(email, "waits"))[1])
        return found[0], found[1]
    finally:
        await db.dispose()


def _settings(database_url: str, redis_url: str) -> dict[str, str]:
    return {} if database_url.startswith("postgresql") else {"FLOWDECK_REDIS_URL": redis_url}


@asynccontextmanager
async def running(database_url: str, redis_url: str, tokens: tuple[str, str] | None = None) -> AsyncIterator[Site]:
    """``serve --workers 1``: the API process and one worker process; every process killed (SIGKILL) at the end."""
    with serve(database_url, "--workers", "1", **_settings(database_url, redis_url)) as (child, lines):
        lines.wait_for("Flowdeck is ready", timeout=60)
        command = [str(arg) for arg in child.args]  # type: ignore[union-attr]
        base = f"http://127.0.0.1:{command[command.index('--port') + 1]}"
        starter, approver = tokens or await _tokens(database_url)
        try:
            async with (
                httpx.AsyncClient(base_url=base, headers={"Authorization": f"Bearer {starter}"}, timeout=20) as a,
                httpx.AsyncClient(base_url=base, headers={"Authorization": f"Bearer {approver}"}, timeout=20) as b,
                httpx.AsyncClient(base_url=base, timeout=20) as anonymous,
            ):
                yield Site(a, b, anonymous, (starter, approver), {})
        finally:
            for pid in [*_worker_children(child.pid), child.pid]:  # every process, as a crash would
                with suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
            child.wait(10)


@pytest.fixture
def redis(request: pytest.FixtureRequest, database_url: str) -> str:
    return "" if database_url.startswith("postgresql") else str(request.getfixturevalue("redis_url"))


async def test_each_kind_resumed_timed_out_cancelled_and_raced(database_url: str, redis: str) -> None:
    async with running(database_url, redis) as site:
        resumed = {kind: await site.start(kind) for kind in KINDS}
        timed_out = {kind: await site.start(kind, timeout=1) for kind in KINDS}
        cancelled = {kind: await site.start(kind) for kind in KINDS}

        for kind, run_id in resumed.items():
            shown = await site.parked(run_id)
            answer = await site.resume(kind, shown)
            assert answer.status_code in (200, 202), (kind, answer.text)
            again = await site.resume(kind, shown)
            assert again.status_code == 409, (kind, again.text)  # a second call: used already
        for kind, run_id in cancelled.items():
            shown = await site.parked(run_id)
            assert (await site.starter.post(f"/api/runs/{run_id}/cancel")).status_code == 200
            assert (await site.ended(run_id))["status"] == "CANCELLED"
            late = await site.resume(kind, shown)
            assert late.status_code in (404, 409), (kind, late.text)  # the run ended: its token is revoked

        for kind, run_id in resumed.items():
            run = await site.ended(run_id)
            assert run["status"] == "COMPLETED", (kind, run)
            got = run["output"]["got"]
            if kind == "approval":
                assert got["decision"] == "approve" and len(got["decisions"]) == 1
            elif kind == "form":
                assert got == ANSWERS["form"]
            else:
                assert got["body"] == ANSWERS["webhook"]
        for kind, run_id in timed_out.items():
            run = await site.ended(run_id)
            assert (run["status"], run["output"]) == ("COMPLETED", {"late": True}), (kind, run)
        for kind, run_id in cancelled.items():
            run = (await site.starter.get(f"/api/runs/{run_id}")).json()
            assert run["status"] == "CANCELLED" and run["nodes"]["hold"]["status"] == "CANCELLED", kind
        await _race_resumes_with_timeouts(site, {kind: await site.start(kind, timeout=2) for kind in KINDS})


async def test_every_process_killed_while_runs_wait_loses_nothing(database_url: str, redis: str) -> None:
    async with running(database_url, redis) as site:
        tokens = site.tokens
        runs = {kind: await site.start(kind) for kind in KINDS}
        shown = {kind: await site.parked(run_id) for kind, run_id in runs.items()}
    # every process is gone (SIGKILL: no drain, nothing handed back); a new serve and worker take over
    async with running(database_url, redis, tokens) as site:
        for kind in KINDS:
            answer = await site.resume(kind, shown[kind])
            assert answer.status_code in (200, 202), (kind, answer.text)
        for kind, run_id in runs.items():
            run = await site.ended(run_id)
            assert run["status"] == "COMPLETED" and "got" in run["output"], (kind, run)


async def _race_resumes_with_timeouts(site: Site, runs: dict[str, str]) -> None:
    """A resume sent at the instant of each timeout: the API process resumes as the worker process's job
    becomes due for the timeout; exactly one of them wins, and the run takes that one's path."""
    shown = {kind: await site.parked(run_id) for kind, run_id in runs.items()}

    async def race(kind: str) -> httpx.Response:
        await asyncio.sleep(max(0.0, shown[kind]["until"] - time.time()))
        return await site.resume(kind, shown[kind])

    answers = await asyncio.gather(*(race(kind) for kind in KINDS))
    for kind, answer in zip(KINDS, answers, strict=True):
        run = await site.ended(runs[kind])
        assert run["status"] == "COMPLETED", (kind, run)
        rows = (await site.starter.get(f"/api/runs/{runs[kind]}/events", params={"limit": 100})).json()["items"]
        done = [r for r in rows if r.get("eventType") == "NODE_COMPLETED" and r.get("nodeId") == "hold"]
        assert len(done) == 1, (kind, done)
        if answer.status_code in (200, 202):  # the resume won: the success path, never the timeout
            assert "got" in run["output"], (kind, run["output"])
        else:  # the timeout won: the resume was refused, the timeout path taken
            assert answer.status_code in (404, 409), (kind, answer.text)
            assert run["output"] == {"late": True}, (kind, run["output"])
