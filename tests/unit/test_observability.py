"""Structured logs and the observability settings, as an operator configures them."""

from __future__ import annotations

import asyncio
import io
import json
import logging

import pytest

from flowdeck.engine.log_scope import current_node
from flowdeck.observability.logs import configure_logging
from flowdeck.observability.metrics import Metrics
from flowdeck.settings import Settings
from flowdeck.storage.queue_stats import QueueStats


@pytest.fixture
def captured() -> io.StringIO:
    stream = io.StringIO()
    root = logging.getLogger()
    saved = (list(root.handlers), root.level)
    yield stream
    for handler in list(root.handlers):
        root.removeHandler(handler)
    for handler in saved[0]:
        root.addHandler(handler)
    root.setLevel(saved[1])


def test_json_logs_are_one_object_per_line_with_the_run_and_node(captured: io.StringIO) -> None:
    configure_logging(verbose=True, log_format="json")
    logging.getLogger().handlers[0].setStream(captured)  # type: ignore[attr-defined]
    token = current_node.set(("run-1", "score", "3"))
    try:
        logging.getLogger("flowdeck.test").warning("node %s is slow", "score")
    finally:
        current_node.reset(token)
    logging.getLogger("flowdeck.test").info("outside any node")

    first, second = (json.loads(line) for line in captured.getvalue().splitlines())
    assert first["message"] == "node score is slow" and first["level"] == "WARNING"
    assert (first["runId"], first["nodeId"], first["iteration"]) == ("run-1", "score", "3")
    assert first["logger"] == "flowdeck.test" and "time" in first
    assert second["message"] == "outside any node" and "runId" not in second


def test_quiet_by_default_but_for_the_notices(captured: io.StringIO) -> None:
    configure_logging(notices=("flowdeck.test.notices",))
    for logger in (logging.getLogger(), logging.getLogger("flowdeck.test.notices")):
        logger.handlers[0].setStream(captured)  # type: ignore[attr-defined]
    logging.getLogger("flowdeck.test").info("chatter nobody asked for")
    logging.getLogger("flowdeck.test").warning("something is off")
    logging.getLogger("flowdeck.test.notices").info("database migrated to 0009")
    assert captured.getvalue().splitlines() == ["WARNING flowdeck.test: something is off", "database migrated to 0009"]


def test_text_logs_stay_readable(captured: io.StringIO) -> None:
    configure_logging(verbose=True, log_format="text")
    logging.getLogger().handlers[0].setStream(captured)  # type: ignore[attr-defined]
    logging.getLogger("flowdeck.test").info("hello")
    assert captured.getvalue().rstrip().endswith("INFO flowdeck.test: hello")


@pytest.mark.parametrize(
    ("env", "field", "value"),
    [
        ({}, "metrics", True),
        ({"FLOWDECK_METRICS": "off"}, "metrics", False),
        ({"FLOWDECK_METRICS": "ON"}, "metrics", True),
        ({"FLOWDECK_LOG_FORMAT": "json"}, "log_format", "json"),
        ({}, "metrics_addr", None),
        ({"FLOWDECK_METRICS_ADDR": "127.0.0.1:9464"}, "metrics_addr", ("127.0.0.1", 9464)),
        ({"FLOWDECK_METRICS_ADDR": "[::1]:9464"}, "metrics_addr", ("::1", 9464)),
        ({"FLOWDECK_METRICS_ADDR": "metrics.internal:9100"}, "metrics_addr", ("metrics.internal", 9100)),
        ({"FLOWDECK_METRICS_PORT": "9464"}, "metrics_addr", ("127.0.0.1", 9464)),  # the older name, on FLOWDECK_HOST
        ({"FLOWDECK_METRICS_PORT": "9464", "FLOWDECK_HOST": "10.0.0.5"}, "metrics_addr", ("10.0.0.5", 9464)),
        ({}, "metrics_token", None),
        ({"FLOWDECK_METRICS_TOKEN": "s3cret-scraper-token"}, "metrics_token", "s3cret-scraper-token"),
    ],
)
def test_observability_settings_are_read_from_the_environment(env: dict[str, str], field: str, value: object) -> None:
    assert getattr(Settings.from_env(env), field) == value


@pytest.mark.parametrize(
    "env",
    [
        {"FLOWDECK_METRICS": "maybe"},
        {"FLOWDECK_LOG_FORMAT": "xml"},
        {"FLOWDECK_METRICS_ADDR": "9464"},
        {"FLOWDECK_METRICS_ADDR": "127.0.0.1"},
        {"FLOWDECK_METRICS_ADDR": "127.0.0.1:99999"},
        {"FLOWDECK_METRICS_ADDR": "127.0.0.1:0"},
        {"FLOWDECK_METRICS_ADDR": ":9464"},
        {"FLOWDECK_METRICS_ADDR": "http://127.0.0.1:9464"},
        {"FLOWDECK_METRICS_PORT": "nine"},
        {"FLOWDECK_METRICS_TOKEN": "short"},
        {"FLOWDECK_METRICS_TOKEN": "a token with spaces in it"},
    ],
)
def test_a_bad_observability_setting_names_the_variable(env: dict[str, str]) -> None:
    (name,) = env
    with pytest.raises(ValueError, match=name):
        Settings.from_env(env)


def test_the_metrics_address_is_set_one_way_only() -> None:
    with pytest.raises(ValueError, match="FLOWDECK_METRICS_ADDR or the older FLOWDECK_METRICS_PORT"):
        Settings.from_env({"FLOWDECK_METRICS_ADDR": "127.0.0.1:9464", "FLOWDECK_METRICS_PORT": "9465"})


async def test_scrapes_share_one_read_a_second_and_a_failing_read_keeps_the_last_values() -> None:
    now = [100.0]
    metrics = Metrics(clock=lambda: now[0])
    answers: list[QueueStats | Exception] = [QueueStats(3, 7.0), RuntimeError("database down"), QueueStats(1, 0.5)]
    reads = 0

    async def queue() -> QueueStats:
        nonlocal reads
        reads += 1
        await asyncio.sleep(0.01)  # scrapes arriving meanwhile wait for this read
        answer = answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer

    metrics.sources.queue = queue
    texts = await asyncio.gather(*(metrics.render() for _ in range(50)))
    assert reads == 1 and all(b"flowdeck_queue_due_jobs 3.0" in text for text in texts)
    now[0] += 0.9
    assert b"flowdeck_queue_due_jobs 3.0" in await metrics.render() and reads == 1  # cached
    now[0] += 0.2
    assert b"flowdeck_queue_due_jobs 3.0" in await metrics.render() and reads == 2  # failed: the last values
    assert b"flowdeck_queue_due_jobs 3.0" in await metrics.render() and reads == 2  # not asked again at once
    now[0] += 1.0
    assert b"flowdeck_queue_due_jobs 1.0" in await metrics.render() and reads == 3
