"""``GET /metrics`` as an operator's Prometheus scrapes it: runs, node durations, retries, the queue; no tenant data.

For the operator only: the listener of ``FLOWDECK_METRICS_ADDR``, or the app's port with
``FLOWDECK_METRICS_TOKEN``; anyone else, a tenant's user included, gets 404 (no token set) or 401.
"""

from __future__ import annotations

import asyncio
import re
import socket
import time
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest
import pytest_asyncio

from flowdeck.observability.metrics import Metrics
from flowdeck.storage.database import Database
from flowdeck.storage.queue_stats import QueueStats
from tests.api.conftest import Account, Server, serve
from tests.support.graphs import definition, edge, end, linear, node
from tests.support.waiting import until

pytestmark = pytest.mark.asyncio(loop_scope="module")

TOKEN = "scraper-token-0123456789"
"""``FLOWDECK_METRICS_TOKEN`` of the module's server."""


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.fixture(scope="module")
def listener_url() -> str:
    return f"http://127.0.0.1:{_free_port()}"


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def server(
    api_db: Database, tmp_path_factory: pytest.TempPathFactory, listener_url: str
) -> AsyncIterator[Server]:
    """The app with both ways in: a metrics listener of its own and a bearer token on the app's port."""
    port = int(listener_url.rsplit(":", 1)[1])
    settings = {"metrics_token": TOKEN, "metrics_addr": ("127.0.0.1", port)}
    async with serve(api_db, tmp_path_factory.mktemp("static"), settings=settings) as running:
        yield running


@pytest_asyncio.fixture(loop_scope="module")
async def scraper(server: Server) -> AsyncIterator[httpx.AsyncClient]:
    """What Prometheus is on the app's port: the metrics token, nothing else."""
    async with server.client(headers={"Authorization": f"Bearer {TOKEN}"}) as client:
        yield client


def sample(text: str, name: str, **labels: str) -> float:
    """The value of one sample of the exposition text (0 when the series does not exist yet)."""
    wanted = ",".join(f'{key}="{value}"' for key, value in sorted(labels.items()))
    for line in text.splitlines():
        match = re.fullmatch(r"([a-z_]+)(?:\{(.*)\})? (\S+)", line)
        if match and match[1] == name and ",".join(sorted((match[2] or "").split(","))) == wanted:
            return float(match[3])
    return 0.0


async def scrape(client: httpx.AsyncClient) -> str:
    response = await client.get("/metrics")
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("text/plain")
    return response.text


async def test_runs_and_nodes_are_counted_without_naming_tenants_workflows_or_runs(
    server: Server, alice: Account, scraper: httpx.AsyncClient
) -> None:
    before = await scrape(scraper)
    created = await alice.client.post("/api/workflows", json=linear(2))
    workflow_id = created.json()["id"]
    run_id = (await alice.client.post(f"/api/workflows/{workflow_id}/runs", json={"input": {}})).json()["instanceId"]
    await server.engine.wait_for_run(run_id, 10)
    finished = "flowdeck_runs_finished_total"
    # The run's end is counted when its update is published, a moment after the database shows it (which
    # is what ``wait_for_run`` may have read): wait for the count rather than catch it before.
    after: str = await until(
        lambda: scrape(scraper),
        lambda text: sample(text, finished, status="COMPLETED") > sample(before, finished, status="COMPLETED"),
        what="the run's end counted",
    )

    started = "flowdeck_runs_started_total"
    assert sample(after, started, trigger="api") == sample(before, started, trigger="api") + 1
    assert sample(after, finished, status="COMPLETED") == sample(before, finished, status="COMPLETED") + 1
    steps = "flowdeck_node_duration_seconds_count"
    assert sample(after, steps, node_type="step", outcome="completed") == (
        sample(before, steps, node_type="step", outcome="completed") + 2
    )
    assert sample(after, "flowdeck_queue_due_jobs") == 0
    for private in (run_id, workflow_id, alice.tenant, alice.email):
        assert private not in after


async def test_the_database_work_is_counted_and_on_sqlite_the_write_lock_held(
    server: Server, api_db: Database, alice: Account, scraper: httpx.AsyncClient
) -> None:
    """What tells an operator where the next limit is: commits and round trips per run, and on SQLite the
    share of time the file's one writer was busy (the seconds held grow with the work)."""
    before = await scrape(scraper)
    created = await alice.client.post("/api/workflows", json=linear(2))
    workflow_id = created.json()["id"]
    run_id = (await alice.client.post(f"/api/workflows/{workflow_id}/runs", json={"input": {}})).json()["instanceId"]
    assert (await server.engine.wait_for_run(run_id, 10)).status == "COMPLETED"
    after = await scrape(scraper)

    assert sample(after, "flowdeck_db_commits_total") > sample(before, "flowdeck_db_commits_total")
    assert sample(after, "flowdeck_db_round_trips_total") > sample(before, "flowdeck_db_round_trips_total")
    held, waited = "flowdeck_sqlite_write_lock_held_seconds_total", "flowdeck_sqlite_write_lock_wait_seconds_total"
    if api_db.is_sqlite:
        assert sample(after, held) > sample(before, held)
        assert f"# TYPE {waited} counter" in after
    else:
        assert "flowdeck_sqlite_" not in after


async def test_a_retried_node_counts_as_a_retry(server: Server, alice: Account, scraper: httpx.AsyncClient) -> None:
    flaky = node("flaky", retry={"maxAttempts": 3, "backoffSeconds": 0.01}, config={"failTimes": 2})
    graph = definition(
        [node("start", "start"), flaky, end()], [edge("start", "flaky"), edge("flaky", "end", "success")]
    )
    before = sample(await scrape(scraper), "flowdeck_node_retries_total")
    run_id = (await alice.client.post("/api/test-runs", json={**graph, "input": {}})).json()["instanceId"]
    run = await server.engine.wait_for_run(run_id, 10)
    assert run.status == "COMPLETED"
    after = await scrape(scraper)
    assert sample(after, "flowdeck_node_retries_total") == before + 2
    assert sample(after, "flowdeck_node_duration_seconds_count", node_type="step", outcome="failed") >= 2


async def test_the_listener_serves_metrics_and_nothing_else(listener_url: str, alice: Account) -> None:
    async with httpx.AsyncClient(base_url=listener_url, timeout=10) as client:
        text = await scrape(client)
        assert "flowdeck_runs_started_total" in text and "flowdeck_queue_due_jobs" in text
        head = await client.head("/metrics")
        assert head.status_code == 200 and head.content == b"" and int(head.headers["content-length"]) > 0
        assert (await client.get("/api/workflows", headers=alice.client.headers)).status_code == 404
        assert (await client.post("/metrics")).status_code == 405


async def test_the_listener_shrugs_off_bad_requests(server: Server, listener_url: str) -> None:
    host, port = listener_url.removeprefix("http://").split(":")
    for request in (b"GET /metrics HTTP/1.1\r\nX-Junk: " + b"x" * 20_000 + b"\r\n\r\n", b"\x16\x03\x01garbage"):
        reader, writer = await asyncio.open_connection(host, int(port))
        writer.write(request)
        writer.write_eof()
        assert await asyncio.wait_for(reader.read(), 10) == b""  # closed without an answer
        writer.close()
    async with httpx.AsyncClient(base_url=listener_url, timeout=10) as client:
        assert "flowdeck_runs_started_total" in await scrape(client)


async def test_the_app_port_answers_only_the_metrics_token(
    server: Server, alice: Account, anonymous: httpx.AsyncClient
) -> None:
    refused = await anonymous.get("/metrics")
    assert refused.status_code == 401 and refused.headers["www-authenticate"].startswith("Bearer")
    assert "FLOWDECK_METRICS_TOKEN" in refused.json()["detail"]
    for credential in (f"Bearer {alice.token}", f"Bearer {TOKEN}x", f"Bearer {TOKEN[:-1]}", f"Basic {TOKEN}"):
        response = await anonymous.get("/metrics", headers={"Authorization": credential})
        assert response.status_code == 401, credential
    assert (await alice.client.get("/metrics")).status_code == 401  # a tenant's API token reads nothing here


async def test_without_a_token_the_app_port_answers_404_even_to_a_signed_in_user(
    api_db: Database, tmp_path: Path
) -> None:
    async with serve(api_db, tmp_path) as default:
        user = await default.account(f"ops-{time.time_ns()}@acme.test", f"ops-{time.time_ns()}")
        async with user.client, default.client() as anonymous:
            for client in (anonymous, user.client):
                response = await client.get("/metrics")
                assert response.status_code == 404
                assert "flowdeck_" not in response.text


async def test_metrics_can_be_turned_off(api_db: Database, tmp_path: Path) -> None:
    port = _free_port()
    settings = {"metrics": False, "metrics_token": TOKEN, "metrics_addr": ("127.0.0.1", port)}
    async with serve(api_db, tmp_path, settings=settings) as off:
        async with off.client(headers={"Authorization": f"Bearer {TOKEN}"}) as client:
            response = await client.get("/metrics")
        assert response.status_code == 404
        assert "FLOWDECK_METRICS=off" in response.json()["detail"]
        with pytest.raises(httpx.ConnectError):  # no listener either
            async with httpx.AsyncClient(timeout=5) as client:
                await client.get(f"http://127.0.0.1:{port}/metrics")


async def test_500_scrapes_read_the_database_about_once_a_second(
    server: Server, scraper: httpx.AsyncClient, listener_url: str
) -> None:
    exporter: Metrics = server.app.api.state.metrics
    assert exporter.sources.queue is not None
    read_queue = exporter.sources.queue
    reads = 0

    async def counted() -> QueueStats:
        nonlocal reads
        reads += 1
        return await read_queue()

    exporter.sources.queue = counted
    try:
        async with httpx.AsyncClient(base_url=listener_url, timeout=30) as listener:
            started = time.monotonic()
            for batch in range(25):  # 20 at once, half on each way in
                client = scraper if batch % 2 else listener
                texts = await asyncio.gather(*(scrape(client) for _ in range(20)))
                assert all("flowdeck_queue_due_jobs" in text for text in texts)
            elapsed = time.monotonic() - started
    finally:
        exporter.sources.queue = read_queue
    assert 1 <= reads <= elapsed + 2, (reads, elapsed)  # one read per started second, however many scrapes
