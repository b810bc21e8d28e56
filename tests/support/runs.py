"""Helpers to run a definition to its end and read what happened, the way a user would see it."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any

from flowdeck.engine.engine import Engine
from flowdeck.engine.projection import NodeView, fold_nodes
from flowdeck.storage.database import Database
from flowdeck.storage.records import InstanceRecord, LogRow
from tests.support.handlers import make_test_registry


@dataclass
class Outcome:
    run: InstanceRecord
    nodes: dict[str, NodeView]
    rows: list[LogRow]

    def status_of(self, node_id: str) -> str:
        return self.nodes[node_id].status.value

    def count(self, event_type: str, node_id: str | None = None) -> int:
        return sum(1 for r in self.rows if r.event_type == event_type and (node_id is None or r.node_id == node_id))

    def per_node(self, event_type: str) -> Counter[str | None]:
        return Counter(r.node_id for r in self.rows if r.event_type == event_type)


async def read_outcome(engine: Engine, instance_id: str) -> Outcome:
    run = await engine.state.get_instance(instance_id)
    assert run is not None
    rows = await engine.state.read_log(instance_id)
    return Outcome(run, fold_nodes(rows, run.status), rows)


async def start(engine: Engine, tenant_id: str, definition: dict[str, Any], run_input: Any = None) -> str:
    workflow = await engine.create_workflow(tenant_id, definition)
    return await engine.start_workflow_run(tenant_id, workflow.id, run_input)


async def run_to_end(
    engine: Engine, tenant_id: str, definition: dict[str, Any], run_input: Any = None, timeout: float = 20
) -> Outcome:
    instance_id = await start(engine, tenant_id, definition, run_input)
    await engine.wait_for_run(instance_id, timeout)
    return await read_outcome(engine, instance_id)


async def rescue(
    db: Database, instance_id: str, *, lease_seconds: float = 2.0, timeout: float = 20
) -> tuple[InstanceRecord, Outcome]:
    """A fresh worker ("rescuer") comes up after the run's worker died holding a lease, and runs it to
    its end: what that run ends as, and what the rescuer reads of it afterwards."""
    rescuer = Engine(db, make_test_registry(), lease_seconds=lease_seconds, poll_interval=0.05, worker_id="rescuer")
    await rescuer.start()
    try:
        run = await rescuer.wait_for_run(instance_id, timeout)
        return run, await read_outcome(rescuer, instance_id)
    finally:
        await rescuer.stop()
