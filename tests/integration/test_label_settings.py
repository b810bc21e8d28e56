"""FLOWDECK_MAX_RUN_LABELS and FLOWDECK_MAX_LABEL_CHARS: read once, refused with a message naming them,
and what a running Flowdeck enforces (a start past them is refused naming the setting)."""

from __future__ import annotations

from pathlib import Path

import pytest

from flowdeck.bench import PYTHON_NOOP, chain
from flowdeck.domain.labels import LabelError
from flowdeck.runtime import open_runtime
from flowdeck.settings import Settings


def test_the_label_limits_are_settings_with_clear_errors() -> None:
    defaults = Settings.from_env({})
    assert (defaults.max_run_labels, defaults.max_label_chars) == (10, 200)
    settings = Settings.from_env({"FLOWDECK_MAX_RUN_LABELS": "3", "FLOWDECK_MAX_LABEL_CHARS": "40"})
    assert (settings.max_run_labels, settings.max_label_chars) == (3, 40)
    with pytest.raises(ValueError, match="FLOWDECK_MAX_LABEL_CHARS must be at most 1000"):
        Settings.from_env({"FLOWDECK_MAX_LABEL_CHARS": "5000"})
    with pytest.raises(ValueError, match="FLOWDECK_MAX_RUN_LABELS must be an integer"):
        Settings.from_env({"FLOWDECK_MAX_RUN_LABELS": "ten"})


async def test_a_running_flowdeck_enforces_the_configured_limits(tmp_path: Path) -> None:
    env = {
        "FLOWDECK_DATABASE_URL": f"sqlite+aiosqlite:///{tmp_path / 'flowdeck.db'}",
        "FLOWDECK_MAX_RUN_LABELS": "2",
        "FLOWDECK_MAX_LABEL_CHARS": "5",
    }
    async with open_runtime(Settings.from_env(env), with_worker=False, with_scheduler=False) as runtime:
        engine = runtime.engine
        tenant_id = await engine.tenants.ensure("acme")
        workflow = await engine.create_workflow(tenant_id, chain(3, PYTHON_NOOP))
        with pytest.raises(LabelError, match="at most 2 labels \\(FLOWDECK_MAX_RUN_LABELS\\)"):
            await engine.start_workflow_run(tenant_id, workflow.id, labels={"a": "1", "b": "2", "c": "3"})
        with pytest.raises(LabelError, match="at most 5 characters \\(FLOWDECK_MAX_LABEL_CHARS\\)"):
            await engine.start_workflow_run(tenant_id, workflow.id, labels={"a": "123456"})
        assert await engine.start_workflow_run(tenant_id, workflow.id, labels={"a": "12345", "b": ""})
