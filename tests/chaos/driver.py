"""The chaos suite's driver: starts runs (REST, or the webhook for the waiting workflow), answers waiting runs'
webhooks as the outside system would, and reads runs meanwhile, as people looking at them do."""

from __future__ import annotations

import asyncio
import contextlib
import random
from typing import Any

from tests.chaos import workload
from tests.chaos.clients import Api, NoAnswerError, Watcher
from tests.chaos.partner import Partner


class Workload:
    """Starts runs (REST, or the webhook for the waiting workflow) and answers waiting runs' webhooks."""

    def __init__(self, api: Api, watcher: Watcher, rng: random.Random, partner: Partner) -> None:
        self.api = api
        self.partner = partner
        self.watcher = watcher
        self.rng = rng
        self.ids: dict[str, str] = {}
        self.started: list[str] = []
        self.unanswered_starts = 0
        self.resumed = 0

    async def create(self) -> dict[str, dict[str, int]]:
        """Saves the workflows; returns each one's in-degree per node (what its barriers must count)."""
        graphs = workload.standalone(self.partner.url)
        for name, graph in graphs.items():
            self.ids[name] = (await self.api.json("POST", "/api/workflows", graph, expect=201))["id"]
        graphs["parent"] = workload.parent(self.ids["diamond"])
        self.ids["parent"] = (await self.api.json("POST", "/api/workflows", graphs["parent"], expect=201))["id"]
        degrees: dict[str, dict[str, int]] = {}
        for name, graph in graphs.items():
            counts = degrees.setdefault(self.ids[name], {})
            for e in graph["edges"]:
                counts[e["target"]] = counts.get(e["target"], 0) + 1
        return degrees

    async def start(self, name: str, run_input: dict[str, Any]) -> str | None:
        workflow_id = self.ids[name]
        try:
            if name == "webhook":
                response = await self.api.call("POST", f"/hooks/{workflow_id}", run_input)
            else:
                response = await self.api.call("POST", f"/api/workflows/{workflow_id}/runs", {"input": run_input})
        except NoAnswerError:
            self.unanswered_starts += 1  # maybe started, maybe not: the database decides, the checks read it
            return None
        assert response.status_code == 202, f"start {name}: {response.status_code} {response.text[:300]}"
        run_id = str(response.json()["instanceId"])
        self.started.append(run_id)
        if len(self.started) % 4 == 1:
            await self.watcher.follow(run_id)
        return run_id

    async def start_randomly(self, stop: asyncio.Event, gap: float) -> None:
        while not stop.is_set():
            name = self.rng.choice(sorted(self.ids))
            await self.start(name, self.rng.choice(workload.INPUTS))
            await asyncio.sleep(gap)

    async def answer_webhooks(self, stop: asyncio.Event) -> None:
        """The outside system a waiting run waits for: finds waiting runs through the API and resumes them."""
        while not stop.is_set():
            with contextlib.suppress(NoAnswerError):
                await self._answer_waiting()
            await asyncio.sleep(0.5)

    async def _answer_waiting(self) -> None:
        cursor: str | None = None
        while True:
            path = f"/api/runs?workflowId={self.ids['webhook']}&status=RUNNING&limit=200"
            page = await self.api.json("GET", path + (f"&cursor={cursor}" if cursor else ""))
            for item in page["items"]:
                run = await self.api.json("GET", f"/api/runs/{item['instanceId']}")
                waiting = (run["nodes"].get("hold") or {}).get("waitingFor")
                if run["nodes"].get("hold", {}).get("status") == "WAITING" and waiting:
                    answer = await self.api.call("POST", waiting["url"], workload.resume_body(run["input"]))
                    assert answer.status_code in (200, 202, 409), f"resume: {answer.status_code} {answer.text[:300]}"
                    self.resumed += answer.status_code != 409
            if not (cursor := page["nextCursor"]):
                return

    async def read_along(self, stop: asyncio.Event) -> None:
        """What people looking at runs do meanwhile: reads, each one counted."""
        while not stop.is_set():
            if self.started:
                with contextlib.suppress(NoAnswerError):
                    await self.api.call("GET", f"/api/runs/{self.rng.choice(self.started)}")
            await asyncio.sleep(0.1)
