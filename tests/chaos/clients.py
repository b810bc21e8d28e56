"""What the outside world does to Flowdeck during the chaos, counted: API calls (every answer's status, so a
single 5xx is seen) and a browser's Socket.IO connection subscribed to some runs (every message kept, in the
order it arrived, to be compared with the log at the end)."""

from __future__ import annotations

import asyncio
import contextlib
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import httpx
import socketio


class NoAnswerError(Exception):
    """No answer (serve is down, or the connection broke before the answer): not an error answer."""


@dataclass
class Api:
    url: str
    token: str
    statuses: Counter[int] = field(default_factory=Counter)
    unreachable: int = 0
    server_errors: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.client = httpx.AsyncClient(
            base_url=self.url, headers={"Authorization": f"Bearer {self.token}"}, timeout=15.0
        )

    async def call(self, method: str, path: str, body: Any = None) -> httpx.Response:
        try:
            response = await self.client.request(method, path, json=body)
        except httpx.TransportError as exc:
            self.unreachable += 1
            raise NoAnswerError(f"{method} {path}: {exc!r}") from exc
        self.statuses[response.status_code] += 1
        if response.status_code >= 500:
            self.server_errors.append(f"{method} {path} -> {response.status_code}: {response.text[:300]}")
        return response

    async def json(self, method: str, path: str, body: Any = None, expect: int = 200) -> Any:
        response = await self.call(method, path, body)
        assert response.status_code == expect, f"{method} {path} -> {response.status_code}: {response.text[:300]}"
        return response.json()

    async def eventually(self, method: str, path: str, body: Any = None, expect: int = 200, tries: int = 600) -> Any:
        """For reads and for set-up: retried while serve is down (a read retried is harmless)."""
        for _ in range(tries):
            with contextlib.suppress(NoAnswerError):
                return await self.json(method, path, body, expect)
            await asyncio.sleep(0.2)
        raise AssertionError(f"{method} {path}: serve never answered")

    async def close(self) -> None:
        await self.client.aclose()


@dataclass
class Watcher:
    """A browser on a few runs' pages: reconnects after serve died, and rejoins each run (a new snapshot)."""

    url: str
    token: str
    messages: dict[str, list[tuple[str, dict[str, Any]]]] = field(default_factory=dict)
    connects: int = 0
    joined_since_connect: set[str] = field(default_factory=set)

    def __post_init__(self) -> None:
        self.sio = socketio.AsyncClient(reconnection=True, reconnection_delay=0.2, reconnection_delay_max=1.0)
        self.sio.on("connect", self._on_connect)
        for event in ("workflow_run_snapshot", "workflow_node_update", "workflow_status_update"):
            self.sio.on(event, self._recorder(event))
        self._tasks: set[asyncio.Task[None]] = set()

    def _recorder(self, event: str) -> Any:
        async def record(data: dict[str, Any]) -> None:
            self.messages.setdefault(data["instanceID"], []).append((event, data))

        return record

    async def _on_connect(self) -> None:
        self.connects += 1
        self.joined_since_connect = set()
        task = asyncio.create_task(self._join_all())  # not inside the handler: a call there waits on itself
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _join_all(self) -> None:
        for run_id in list(self.messages):
            await self._join(run_id)

    async def _join(self, run_id: str) -> None:
        with contextlib.suppress(socketio.exceptions.SocketIOError, TimeoutError):
            ack = await self.sio.call("workflow_run_join", {"runId": run_id}, timeout=10)
            if isinstance(ack, dict) and ack.get("ok"):
                self.joined_since_connect.add(run_id)

    async def connect(self) -> None:
        await self.sio.connect(self.url, auth={"token": self.token}, transports=["websocket"], retry=True)

    async def follow(self, run_id: str) -> None:
        self.messages.setdefault(run_id, [])
        if self.sio.connected:
            await self._join(run_id)

    async def settled(self, timeout: float = 60.0) -> None:
        """Connected, and every followed run joined on this connection."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while loop.time() < deadline:
            if self.sio.connected and self.joined_since_connect >= set(self.messages):
                return
            if self.sio.connected and not self._tasks:
                await self._join_all()
            await asyncio.sleep(0.2)
        raise AssertionError(f"the browser never rejoined its runs (connected: {self.sio.connected})")

    async def close(self) -> None:
        with contextlib.suppress(Exception):
            await self.sio.disconnect()
