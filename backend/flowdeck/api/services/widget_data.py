"""The data answer of a widget (docs/widgets.md): replay the latest COMPLETED run, run a sync one, or read a run."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, Literal

import msgspec
from litestar.exceptions import NotFoundException

from flowdeck.api.inputs import check_json
from flowdeck.api.widget_schemas import WidgetDataOut, WidgetErrorOut
from flowdeck.domain.statuses import RunStatus
from flowdeck.engine.engine import Engine
from flowdeck.storage.widgets import FinishedRun, WidgetRecord, WidgetStore
from flowdeck.widgets.config import MetricConfig, SyncOptions, WidgetConfig, parse_config
from flowdeck.widgets.errors import ConfigError, PathError
from flowdeck.widgets.inputs import build_input
from flowdeck.widgets.process import widget_data

__all__ = ("Admit", "Query", "WidgetDataService")

Query = Mapping[str, Sequence[str]]
"""A request's query parameters: name -> every value given."""
Mode = Literal["replay", "sync", "run"]
_SYNC_KEYS = ("waitSeconds", "inputs", "runsPerMinute")
Admit = Callable[[SyncOptions], Awaitable[None]]
"""Called before a sync widget starts a run; raises to refuse it (a public link's rate limit)."""


def _missing_run(run_id: str) -> NotFoundException:
    return NotFoundException(detail=f"run {run_id} not found")


class WidgetDataService:
    def __init__(self, store: WidgetStore, engine: Engine) -> None:
        self.store = store
        self.engine = engine

    async def of_widget(
        self, widget: WidgetRecord, query: Query, admit: Admit | None = None, *, public: bool = False
    ) -> WidgetDataOut:
        """Replay: the latest COMPLETED production run. Sync: a new run from ``query`` (once ``admit`` let it
        start), waited for. ``public`` (an embed link): a failed run's error text is not shown."""
        config = parse_config(widget.type, widget.mode, widget.config)
        if config.sync is None:
            return await self._replay(widget, config)
        run_input = build_input(config.sync.inputs, query)
        check_json(input=run_input)
        if admit is not None:
            await admit(config.sync)
        with self.engine.watch_run() as watch:  # from before it starts: its end is heard, not read
            try:
                run_id = await self.engine.start_workflow_run(
                    widget.tenant_id, widget.workflow_id, run_input, trigger="widget", instance_id=watch.instance_id
                )
            except LookupError as exc:  # the workflow was deleted meanwhile (and the widget with it)
                raise NotFoundException(detail=f"widget {widget.id} not found") from exc
            await watch.outcome(config.sync.wait_seconds, opened_before_start=True)
        run = await self.store.run(widget.tenant_id, run_id)
        if run is None:
            raise _missing_run(run_id)
        return await self._answer(widget.id, config, "sync", run, public=public)

    async def of_widget_run(self, widget: WidgetRecord, run_id: str, *, public: bool = False) -> WidgetDataOut:
        """A production run of the widget's workflow (a sync page that followed it live); any other is a 404."""
        run = await self.store.run(widget.tenant_id, run_id)
        if run is None or run.is_test or run.workflow_id != widget.workflow_id:
            raise _missing_run(run_id)
        config = parse_config(widget.type, widget.mode, widget.config)
        return await self._answer(widget.id, config, "sync" if config.sync else "replay", run, public=public)

    async def of_run(self, tenant_id: str, run_id: str, widget_type: str, config_text: str) -> WidgetDataOut:
        """Any run of the tenant (test runs too) shown with an unsaved config (the widget builder's preview)."""
        run = await self.store.run(tenant_id, run_id)
        if run is None:
            raise _missing_run(run_id)
        try:
            raw = msgspec.json.decode(config_text)
        except msgspec.DecodeError as exc:
            raise ConfigError("config", f"is not valid JSON ({exc})", source="query") from exc
        mode = "sync" if isinstance(raw, dict) and any(key in raw for key in _SYNC_KEYS) else "replay"
        try:
            config = parse_config(widget_type, mode, raw)
        except ConfigError as exc:
            raise ConfigError(exc.field, exc.message, source="query") from exc
        return await self._answer(None, config, "run", run)

    async def _replay(self, widget: WidgetRecord, config: WidgetConfig) -> WidgetDataOut:
        wanted = 2 if isinstance(config.settings, MetricConfig) else 1
        runs = await self.store.completed_runs(widget.tenant_id, widget.workflow_id, limit=wanted)
        if not runs:
            error = WidgetErrorOut(field=None, message="the workflow has no COMPLETED production run yet")
            return _out(widget.id, config, "replay", "empty", None, error=error)
        previous = runs[1].output if len(runs) > 1 else None
        return _ready_or_error(widget.id, config, "replay", runs[0], previous)

    async def _answer(
        self, widget_id: str | None, config: WidgetConfig, mode: Mode, run: FinishedRun, *, public: bool = False
    ) -> WidgetDataOut:
        if run.status in (RunStatus.FAILED, RunStatus.CANCELLED):
            # A run's error may quote its input or a node's output: an embed link's holder gets the status only.
            detail = f": {run.error}" if run.error and not public else ""
            message = f"the run {run.status.value}{detail}"
            return _out(widget_id, config, mode, "error", run, error=WidgetErrorOut(field=None, message=message))
        if run.status is not RunStatus.COMPLETED:
            return _out(widget_id, config, mode, "running", run)
        previous = None
        if isinstance(config.settings, MetricConfig) and run.workflow_id is not None and not run.is_test:
            before = await self.store.completed_runs(run.tenant_id, run.workflow_id, before=run.created_at)
            previous = before[0].output if before else None
        return _ready_or_error(widget_id, config, mode, run, previous)


def _ready_or_error(
    widget_id: str | None, config: WidgetConfig, mode: Mode, run: FinishedRun, previous_output: Any
) -> WidgetDataOut:
    try:
        data = widget_data(config, run.output, previous_output)
    except PathError as exc:
        return _out(widget_id, config, mode, "error", run, error=WidgetErrorOut(field=exc.field, message=str(exc)))
    return _out(widget_id, config, mode, "ready", run, data=data)


def _out(
    widget_id: str | None,
    config: WidgetConfig,
    mode: Mode,
    status: Literal["ready", "empty", "running", "error"],
    run: FinishedRun | None,
    *,
    data: dict[str, Any] | None = None,
    error: WidgetErrorOut | None = None,
) -> WidgetDataOut:
    return WidgetDataOut(
        widget_id=widget_id,
        type=config.type,
        mode=mode,
        status=status,
        run_id=None if run is None else run.id,
        run_status=None if run is None else run.status,
        run_completed_at=None if run is None else run.completed_at,
        data=data,
        error=error,
    )
